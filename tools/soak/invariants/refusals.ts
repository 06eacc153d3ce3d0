// What counts as a refused delete for I5, and the hostile consumer's one excuse.
//
// A delete can be refused without a verdict on its dependents in four ways, all judged alike by I5:
//   - unavailable: 503, the webhook's own "cannot check dependents ... yet" (index syncing, unreadable, a rule's
//     shard unseen);
//   - webhook failure: kcp could not get the webhook's answer and, with failurePolicy Fail, refused it itself
//     ("failed calling webhook ...": a connection refused or reset, a timeout, a 429 from a full review pool after
//     kcp's retries), or answered 429/504 itself. This is how slow-upload starvation would look: review slots or
//     connections held by trickling bodies leave kcp's genuine reviews queued past 2 s (429) or past kcp's 10 s
//     webhook timeout (context deadline exceeded);
//   - lookup failed: 500, the webhook's own "cannot check dependents ...: listing ... failed" (a live list failed);
//   - no answer: our request got no answer at all (status 0: our client's 60 s timeout or a broken connection).
import type { HostileEpisode, OpRecord } from "../history.ts";
import type { Judging, RefusalKind } from "./findings.ts";

/** The operations that delete (or dry-run delete) and so may be refused. */
export const DELETES: ReadonlySet<string> = new Set([
  "delete",
  "delete-dry-run",
  "delete-collection",
  "probe",
  "window-probe",
]);

export const REFUSAL_KINDS: readonly RefusalKind[] = ["unavailable", "webhook failure", "lookup failed", "no answer"];

export function refusalOf(op: OpRecord): RefusalKind | undefined {
  if (op.status === 503) return "unavailable";
  if (/failed calling webhook/i.test(op.message) || op.status === 429 || op.status === 504) return "webhook failure";
  if (op.status === 500 && /cannot check dependents of/.test(op.message)) return "lookup failed";
  if (op.status === 0) return "no answer";
  return undefined;
}

export const overlaps = (op: OpRecord, [from, to]: [number, number]): boolean =>
  op.sentAt <= to && op.answeredAt >= from;

/**
 * The hostile consumer's documented answer, and only that: in its own workspace, in the namespace holding its
 * dependents (or for a cluster-scoped target, which any namespace's dependents may name), a delete of a resource that
 * a rule of an overloaded dependent type protects, while that episode's objects may still be in the index (until
 * the consistency window after they were seen gone) is refused 503 (index mode: the names cap or the workspace
 * budget crossed). In live mode a list that fails there (500) fails only the workspace it lists: its own. Nothing
 * else is excused: not in another workspace, not for a type it did not overload, not oversized references (never
 * kept, so they never refuse), not a webhook failure, and never anything for slow uploads.
 */
export function hostileOwn(j: Judging, op: OpRecord, kind: RefusalKind): HostileEpisode | undefined {
  if (kind !== "unavailable" && kind !== "lookup failed") return undefined;
  return (j.h.hostile ?? []).find((e) => {
    if (e.kind !== "dependents" || op.cluster !== e.cluster) return false;
    if (op.namespace !== "" && op.namespace !== e.namespace) return false;
    if (!overlaps(op, [e.startAt, e.endAt + j.h.windowMs])) return false;
    if (kind === "lookup failed") return j.h.mode.startsWith("live"); // the index lists nothing on a delete
    return j.tl
      .edgesEver(op.sentAt, op.answeredAt)
      .some((edge) => edge.dependency === op.resource && e.overloaded.includes(edge.dependent));
  });
}

/** The hostile episodes under way while `op` was decided (for the report and the violation's message). */
export function hostileDuring(j: Judging, op: OpRecord): HostileEpisode[] {
  return (j.h.hostile ?? []).filter((e) => overlaps(op, [e.startAt, e.endAt]));
}
