// What the decision needs from wherever dependents come from: one method, and an answer that says either what was
// found or why the finder cannot answer now. "Cannot answer now" is an answer, not an exception, so the handler
// does not need to know which finder it talks to; only a failure nobody expected is thrown (and becomes a 500).
// Both finders (live.ts, index/) depend on this module, never on each other.
import type { Lookup, LookupResult, UnavailableSeen } from "../admission.ts";

/** Dependents matching a lookup; `notBound` when the dependent type is not served in the consumer workspace (404). */
export type FoundDependents = Extract<LookupResult, { ok: true }>;

/**
 * Why a finder cannot answer yet: the type is not watched yet (starting), not listed on every shard (syncing),
 * a list or watch fails (failing), or the lookup's field paths are not indexed yet (not-indexed).
 * `no-read-access` (only `--lookup=auto`, hybrid.ts) is not "yet": the rule's provider never consented to the index
 * (or revoked it) and a live list in the consumer workspace is refused with 403 too, so nothing can check this
 * dependent type there until one of the two grants is given.
 * `unreadable` (the index) is not "yet" either: the consumer workspace holds dependents the index keeps unread (over
 * a budget, index/budget.ts); only that workspace's lookups of that type get it, until it removes them.
 */
export type UnavailableReason = "starting" | "syncing" | "failing" | "not-indexed" | "no-read-access" | "unreadable";

/**
 * The finder cannot answer truthfully now. `message` is shown to the deleter, who may be any consumer: it names
 * nothing but what the deleter's own workspace holds, so never the dependent type (another provider's), a rule, an
 * export or a logical cluster. `detail` is for the log and says all of it.
 */
export interface Unavailable {
  ok: false;
  reason: UnavailableReason;
  message: string;
  detail: string;
  /**
   * Set by a finder that keeps a last good view (the index): whether it ever had one, and whether the consumer held
   * dependents of this type in it. decision.ts refuses only where they may be; without it, it refuses.
   */
  seen?: UnavailableSeen;
}

export type FinderAnswer = FoundDependents | Unavailable;

export interface DependentFinder {
  /**
   * Dependents matching `lookup`, stopping once more than `limit` are found, or why they cannot be known now.
   * Throws only on a failure it cannot explain (a list that failed, a timeout): the DELETE is then refused with 500.
   */
  find(lookup: Lookup, limit: number, signal?: AbortSignal): Promise<FinderAnswer>;
}

export const found = (dependents: FoundDependents["dependents"], complete: boolean): FoundDependents => ({
  ok: true,
  dependents,
  complete,
});

export const unavailable = (
  reason: UnavailableReason,
  message: string,
  detail: string,
  seen?: UnavailableSeen,
): Unavailable => ({ ok: false, reason, message, detail, ...(seen ? { seen } : {}) });

/** `/apis/<g>/<v>[/namespaces/<ns>]/<resource>` of the dependent type; the core group lives under `/api/<v>`. */
export function dependentCollectionPath(lookup: Lookup, namespace: string | undefined): string {
  const d = lookup.dependent;
  const enc = encodeURIComponent;
  const api = d.group === "" ? `/api/${enc(d.version)}` : `/apis/${enc(d.group)}/${enc(d.version)}`;
  const ns = namespace !== undefined ? `/namespaces/${enc(namespace)}` : "";
  return `${api}${ns}/${enc(d.resource)}`;
}
