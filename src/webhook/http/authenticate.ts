// Caller authentication on each request: with requireClientCert, what the TLS socket saw of the caller's certificate
// goes through checkCaller (callers.ts); a caller it refuses is logged with what it presented.
import type http from "node:http";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { checkCaller, parseSubjectMatchers, type PeerCertificateFacts } from "./callers.ts";

export interface CallerAuthOptions {
  requireClientCert?: boolean;
  /** The CA bundle that signs callers' certificates; required with requireClientCert. */
  clientCAFile?: string;
  /** `CN=<name>`, `O=<organization>` or `DNS=<SAN name>` entries; empty admits any signed cert. */
  allowedClientSubjects?: readonly string[];
  logger: Logger;
}

/** Undefined: the caller may be answered. Otherwise why not, for the 401 message. */
export type Authenticate = (req: http.IncomingMessage) => string | undefined;

/** What Node's TLS socket reports about the peer's certificate, in checkCaller's terms. */
function peerFacts(socket: TLSSocket): PeerCertificateFacts {
  const peer = socket.getPeerCertificate();
  return {
    authorized: socket.authorized,
    ...(socket.authorizationError ? { authorizationError: String(socket.authorizationError) } : {}),
    ...(peer && Object.keys(peer).length > 0
      ? { subject: peer.subject ?? {}, ...(peer.subjectaltname ? { subjectAltName: peer.subjectaltname } : {}) }
      : {}),
  };
}

/**
 * The per-request check, or one that admits everyone without requireClientCert. Throws when the options cannot work
 * (requireClientCert without a CA, a malformed allow-list entry), so the server refuses to start.
 */
export function callerAuthenticator(opts: CallerAuthOptions): Authenticate {
  if (opts.requireClientCert && opts.clientCAFile === undefined) {
    throw new Error("requireClientCert needs tls.clientCAFile: the CA bundle that signs callers' certificates");
  }
  const matchers = parseSubjectMatchers(opts.allowedClientSubjects ?? []);
  if ("error" in matchers) throw new Error(matchers.error);
  if (!opts.requireClientCert) return () => undefined;
  return (req) => {
    const verdict = checkCaller(peerFacts(req.socket as TLSSocket), matchers);
    if (verdict.ok) return undefined;
    // What the webhook saw, so an operator can tell a missing certificate from a wrong CA or subject.
    opts.logger.warn(
      { caller: verdict.seen, remote: req.socket.remoteAddress, path: (req.url ?? "").slice(0, 200) },
      `caller refused: ${verdict.message}`,
    );
    return verdict.message;
  };
}
