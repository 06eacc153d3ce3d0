// What a DELETE (or a dry run of one) answered, and a refusal read back into blockers. The webhook lists every
// blocker (up to its cap) as `status.details.causes` ({reason: "ReferencedBy", message: "<Kind>/<name>" or
// "<Kind>/<namespace>/<name>", field}); kcp passes details through. When they are missing (an older webhook, a proxy
// that drops them) the human message is parsed instead, which names at most ten; the result says which source it
// came from and whether it is complete.
import { isRecord } from "../util/json.ts";

export const REFERENCED_BY = "ReferencedBy";

export interface Blocker {
  kind: string;
  /** Set when the webhook named it (`Kind/ns/name`): a namespaced dependent of a cluster-scoped object. */
  namespace?: string;
  name: string;
  /** Field path in the dependent that names the object (only from causes). */
  field?: string;
}

export interface Refusal {
  code: number;
  reason: string;
  /** The message as kcp returns it, `admission webhook "<name>" denied the request: ...`. */
  message: string;
  /** The webhook that refused; undefined when the refusal did not come from an admission webhook. */
  webhook?: string;
  blockers: Blocker[];
  source: "causes" | "message" | "none";
  /** How many blockers the webhook found in all, when the message says so (`... and 7 more`). */
  total?: number;
  /** False when the webhook stopped counting (`and at least N more`) or the message names only some. */
  complete: boolean;
}

/** `Kind/name` or `Kind/namespace/name`, as the webhook's blockerId writes them. */
export function parseBlockerId(id: string): Blocker | undefined {
  const parts = id.trim().split("/");
  if (parts.some((p) => p === "")) return undefined;
  if (parts.length === 2) return { kind: parts[0]!, name: parts[1]! };
  if (parts.length === 3) return { kind: parts[0]!, namespace: parts[1]!, name: parts[2]! };
  return undefined;
}

const WEBHOOK_PREFIX = /^admission webhook "([^"]+)" denied the request: ([\s\S]*)$/;
const REFERENCED = /still referenced by (.+?)(?: and (at least )?(\d+) more)?$/;

/** Blockers named in the human message, with the count it announces. */
export function blockersFromMessage(text: string): {
  blockers: Blocker[];
  total?: number;
  /** The webhook stopped counting: `and at least N more`. */
  atLeast: boolean;
} {
  const m = REFERENCED.exec(text.trim());
  if (!m) return { blockers: [], atLeast: false };
  const blockers = m[1]!
    .split(", ")
    .map(parseBlockerId)
    .filter((b): b is Blocker => b !== undefined);
  const more = m[3] ? Number(m[3]) : 0;
  return { blockers, total: blockers.length + more, atLeast: m[2] !== undefined };
}

function blockersFromCauses(causes: unknown): Blocker[] | undefined {
  if (!Array.isArray(causes)) return undefined;
  const out: Blocker[] = [];
  for (const c of causes) {
    if (!isRecord(c) || c["reason"] !== REFERENCED_BY || typeof c["message"] !== "string") continue;
    const b = parseBlockerId(c["message"]);
    if (!b) continue;
    if (typeof c["field"] === "string" && c["field"] !== "") b.field = c["field"];
    out.push(b);
  }
  return out.length > 0 ? out : undefined;
}

/** A metav1.Status from a refused request → what refused it and every blocker it names. */
export function parseRefusal(status: unknown): Refusal {
  const s = isRecord(status) ? status : {};
  const code = typeof s["code"] === "number" ? s["code"] : 0;
  const reason = typeof s["reason"] === "string" ? s["reason"] : "";
  const message = typeof s["message"] === "string" ? s["message"] : "";
  const wm = WEBHOOK_PREFIX.exec(message);
  const inner = wm ? wm[2]! : message;
  const fromMessage = blockersFromMessage(inner);
  const details = isRecord(s["details"]) ? s["details"] : {};
  const fromCauses = blockersFromCauses(details["causes"]);
  const base = { code, reason, message, ...(wm ? { webhook: wm[1]! } : {}) };
  const total = fromMessage.total;
  if (fromCauses) {
    // The message's count covers everything the webhook found; causes are capped, so fewer means incomplete.
    const complete = total === undefined || (!fromMessage.atLeast && fromCauses.length >= total);
    return { ...base, blockers: fromCauses, source: "causes", ...(total !== undefined ? { total } : {}), complete };
  }
  if (fromMessage.blockers.length > 0)
    return {
      ...base,
      blockers: fromMessage.blockers,
      source: "message",
      ...(total !== undefined ? { total } : {}),
      complete: !fromMessage.atLeast && fromMessage.blockers.length === total,
    };
  return { ...base, blockers: [], source: "none", complete: false };
}

/**
 * What kcp answered a DELETE or a dry run of one, the one shape every command reads: allowed; gone (404, or the uid
 * precondition of a real delete no longer met); or refused, with the HTTP status and the refusal read back.
 */
export type DeleteAnswer =
  { outcome: "allowed" } | { outcome: "gone" } | { outcome: "refused"; status: number; refusal: Refusal };

/** An HTTP status and body (a Status object, or text when the body was none) → the answer. Pure. */
export function answerOf(status: number, body: unknown): DeleteAnswer {
  if (status >= 200 && status < 300) return { outcome: "allowed" };
  if (status === 404) return { outcome: "gone" };
  const text = typeof body === "string" ? body.trim() : "";
  return { outcome: "refused", status, refusal: parseRefusal(isRecord(body) ? body : { code: status, message: text }) };
}
