// Who may call the webhook: a client certificate verified against the configured CA bundle, whose subject is on an
// allow-list. Pure: the server hands in what the TLS socket saw, and gets a verdict with the reason for the log.

/** One allow-list entry: `CN=<name>`, `O=<organization>` or `DNS=<SAN DNS name>`, matched exactly. */
export interface SubjectMatcher {
  field: "CN" | "O" | "DNS";
  value: string;
}

/** What the TLS layer reports about the caller's certificate. */
export interface PeerCertificateFacts {
  /** Whether the chain verified against the client CA bundle. */
  authorized: boolean;
  /** Node's reason when it did not (e.g. UNABLE_TO_VERIFY_LEAF_SIGNATURE). */
  authorizationError?: string;
  /** Undefined when the caller presented no certificate. */
  subject?: { CN?: string | string[]; O?: string | string[] };
  /** `DNS:a, IP Address:1.2.3.4, ...` as Node reports subjectaltname. */
  subjectAltName?: string;
}

export type CallerVerdict = { ok: true; identity: string } | { ok: false; message: string; seen: string };

/** Parses allow-list entries; the error names the bad entry. */
export function parseSubjectMatchers(entries: readonly string[]): SubjectMatcher[] | { error: string } {
  const out: SubjectMatcher[] = [];
  for (const entry of entries) {
    const m = /^(CN|O|DNS)=(.+)$/.exec(entry.trim());
    if (!m)
      return {
        error: `allowed client subject ${JSON.stringify(entry)}: want CN=<name>, O=<organization> or DNS=<name>`,
      };
    out.push({ field: m[1] as SubjectMatcher["field"], value: m[2] ?? "" });
  }
  return out;
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function dnsNames(subjectAltName: string | undefined): string[] {
  return (subjectAltName ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.startsWith("DNS:"))
    .map((s) => s.slice(4));
}

/** How the certificate reads in the log: `CN=a, O=b, DNS=c`, clipped. */
function describe(facts: PeerCertificateFacts): string {
  if (!facts.subject) return "no client certificate";
  const parts = [
    ...list(facts.subject.CN).map((v) => `CN=${v}`),
    ...list(facts.subject.O).map((v) => `O=${v}`),
    ...dnsNames(facts.subjectAltName).map((v) => `DNS=${v}`),
  ];
  return parts.join(", ").slice(0, 300) || "a certificate without subject";
}

/**
 * Admits a caller whose certificate verified against the CA and, with a non-empty allow-list, matches one entry.
 * An empty allow-list admits any certificate the CA signed.
 */
export function checkCaller(facts: PeerCertificateFacts, allowed: readonly SubjectMatcher[]): CallerVerdict {
  const seen = describe(facts);
  if (!facts.subject) return { ok: false, message: "a client certificate is required", seen };
  if (!facts.authorized) {
    return {
      ok: false,
      message: "the client certificate is not signed by a trusted CA",
      seen: `${seen} (${facts.authorizationError ?? "not verified"})`,
    };
  }
  if (allowed.length === 0) return { ok: true, identity: seen };
  const values: Record<SubjectMatcher["field"], string[]> = {
    CN: list(facts.subject.CN),
    O: list(facts.subject.O),
    DNS: dnsNames(facts.subjectAltName),
  };
  if (allowed.some((m) => values[m.field].includes(m.value))) return { ok: true, identity: seen };
  return { ok: false, message: "the client certificate's subject is not allowed to call this webhook", seen };
}
