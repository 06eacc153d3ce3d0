// I5, no collateral refusal: a rule's faults may refuse only the DELETEs where that rule's dependents can be, and a
// hostile consumer may get refusals only in its own workspace, for the types it overloaded.
//
// The rule, as judged: a delete (delete, dry-run delete, DELETECOLLECTION, sentinel or window probe) refused without
// a verdict on its dependents (refusals.ts: 503, kcp's "failed calling webhook", the webhook's 500 for a failed list,
// no answer) is a violation unless, at some moment between its send and its answer, a fault of the soak's own making
// could make a rule that gates it unable to answer there:
//   - a webhook, controller or shard fault (every fault but the careless author's), from its start until I3's bound
//     (--bound) after its end: a killed replica relists its index, a stalled shard's rules and dependents go silent,
//     and "protection back within the bound" is I3's promise, so refusals until then are fail-closed, not collateral;
//   - a change the soak made to its own rule (rule churn), likewise until the bound after it was answered: a recreated
//     rule's index lists again, and the churned rule's dependents (servers) may be in every consumer, which all bind
//     the soak provider's export;
//   - the careless author's faulty rule (either flavour), only in a workspace where an object of its dependent
//     resource existed then. Its dependents (gadgets, widgets) are never created, so every refusal it causes is
//     collateral;
//   - the hostile consumer's overload, only as refusals.ts's hostileOwn says: its own workspace and overloaded types.
// (A local target's delete the webhook refused in a consumer that declined its claim is consent.ts's to judge: there
// nothing excuses it.)
// Hostile episodes (the hostile provider's forged rule status and endpoint slices among them) are no fault: while only they are under way, every other refusal is a violation, and slow uploads
// excuse nothing at all (a review takes a slot only once its body is whole).
import type { FaultRecord, OpRecord } from "../history.ts";
import type { Judging, RefusalKind } from "./findings.ts";
import { webhookAsked } from "./consent.ts";
import { DELETES, hostileDuring, hostileOwn, overlaps, refusalOf } from "./refusals.ts";
import { iso, versionsOver } from "./timeline.ts";

type Span = [number, number];

/** The intervals in which a refusal is fail-closed anywhere (the soak's webhook, shard and rule-churn faults). */
function excusingSpans(j: Judging): Span[] {
  const bound = j.h.boundMs;
  const spans: Span[] = j.h.faults.filter((f) => f.kind !== "careless-rule").map((f) => [f.startAt, f.endAt + bound]);
  for (const op of j.h.ops) if (op.kind === "rule-churn") spans.push([op.sentAt, op.answeredAt + bound]);
  return spans;
}

/** Whether an object of the faulty rule's dependent resource existed in the op's workspace while it was decided. */
function dependentsThere(j: Judging, op: OpRecord, f: FaultRecord): boolean {
  if (!f.dependent) return true; // a fault that does not say where its dependents are excuses everywhere
  for (const key of j.tl.byCluster.get(op.cluster) ?? []) {
    if (key.split("|")[1] !== f.dependent) continue;
    const versions = versionsOver(j.tl.objects.get(key) ?? [], op.sentAt, op.answeredAt);
    if (versions.some((v) => v.type !== "DELETED")) return true;
  }
  return false;
}

export function checkCollateral(j: Judging): void {
  const spans = excusingSpans(j);
  const careless = j.h.faults.filter((f) => f.kind === "careless-rule");
  for (const op of j.h.ops) {
    if (!DELETES.has(op.kind)) continue;
    const excused = spans.some((s) => overlaps(op, s));
    const standing = careless.filter((f) => overlaps(op, [f.startAt, f.endAt]));
    const hostile = hostileDuring(j, op);
    if (!excused && op.status !== 404) {
      if (standing.length > 0) j.out.checkedCollateral++;
      if (hostile.length > 0) j.out.checkedHostile++;
      if (hostile.some((e) => e.kind === "slow-uploads")) j.out.checkedSlowUploads++;
      if (hostile.some((e) => e.kind === "provider")) j.out.checkedProvider++;
    }
    const kind = refusalOf(op);
    if (!kind) continue;
    if (webhookAsked(op) && j.tl.declinedLocal(op.cluster, op.resource)) continue; // consent.ts judges it
    j.out.refused[kind]++;
    if (kind === "unavailable") j.out.refusedUnavailable++;
    if (excused || standing.some((f) => dependentsThere(j, op, f))) continue;
    if (hostileOwn(j, op, kind)) {
      j.out.excusedHostile++;
      continue;
    }
    j.out.violations.push({ invariant: "I5", message: violation(j, op, kind, standing), at: op.sentAt });
  }
}

function violation(j: Judging, op: OpRecord, kind: RefusalKind, standing: FaultRecord[]): string {
  const why = standing.length > 0 ? `the careless rule stood (${standing[0]?.target}) but ` : "";
  const hostile = hostileDuring(j, op);
  const during =
    hostile.length > 0
      ? ` (the hostile ${[...new Set(hostile.map((e) => e.kind))].join(" and ")} under way, which excuse only ` +
        `the hostile consumer's 503 in its own workspace for the types it overloaded)`
      : "";
  const answer = kind === "unavailable" ? "refused 503" : `refused (${kind}, status ${op.status})`;
  return (
    `${op.kind} #${op.id} of ${op.resource} ${j.ws(op.cluster)}/${op.namespace}/${op.name} ${answer} at ` +
    `${iso(op.answeredAt)} though ${why}no fault of the soak's could refuse there then${during}: ${op.message}`
  );
}
