// I5 for local targets: a consumer that declined the claim of a local-target rule's export is not protected, so none
// of its deletes of that rule's local dependencies (its own Secrets) may reach the webhook: none is denied, and none is
// refused by the webhook or for want of its answer, whatever the faults (no webhook is asked there, so no fault of the
// webhook's excuses it). Any other answer (a 404, kcp's own 504 or no answer while a shard stalls) is no sign of the
// webhook, and collateral.ts judges it as for any type. Referenced or not, such deletes go through.
import type { OpRecord } from "../history.ts";
import type { Judging } from "./findings.ts";
import { DELETES } from "./refusals.ts";
import { iso } from "./timeline.ts";

/** Whether the webhook answered `op` or kcp refused it for want of the webhook's answer. */
export function webhookAsked(op: OpRecord): boolean {
  return op.status === 409 || /admission webhook|failed calling webhook|cannot check dependents/i.test(op.message);
}

export function checkDeclined(j: Judging): void {
  for (const op of j.h.ops) {
    if (!DELETES.has(op.kind) || !j.tl.declinedLocal(op.cluster, op.resource)) continue;
    j.out.checkedDeclined++;
    if (!webhookAsked(op)) continue;
    j.out.violations.push({
      invariant: "I5",
      message:
        `${op.kind} #${op.id} of ${op.resource} ${j.ws(op.cluster)}/${op.namespace}/${op.name} answered ` +
        `${op.status} at ${iso(op.answeredAt)} by or for the webhook, though the workspace declined the claim of ` +
        `the export whose local-target rule names ${op.resource}: ${op.message}`,
      at: op.sentAt,
    });
  }
}
