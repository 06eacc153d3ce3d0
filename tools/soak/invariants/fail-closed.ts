// I4, fail closed: while no webhook replica can answer, no delete of a protected resource succeeds (a local target is
// protected only in the consumers that accepted its claim: elsewhere its deletes never reach the webhook).
import type { OpRecord } from "../history.ts";
import type { Judging } from "./findings.ts";
import { iso } from "./timeline.ts";

export function checkFailClosed({ h, tl, out, ws }: Judging): void {
  for (const f of h.faults) {
    if (!f.webhookDown) continue;
    const edges = tl.edgesInForce(f.startAt, f.endAt);
    const protects = (op: OpRecord): boolean =>
      edges.some((e) => e.dependency === op.resource && tl.protectsIn(e, op.cluster));
    for (const op of h.ops) {
      // A DELETECOLLECTION of an empty collection succeeds without any admission call: not judged here.
      if (op.kind !== "delete" && op.kind !== "delete-dry-run" && op.kind !== "probe") continue;
      if (op.sentAt < f.startAt || op.answeredAt > f.endAt || !protects(op)) continue;
      if (op.status !== 404) out.checkedWhileDown++;
      if (op.status >= 200 && op.status < 300) {
        out.violations.push({
          invariant: "I4",
          message:
            `${op.kind} #${op.id} of ${op.resource} ${ws(op.cluster)}/${op.namespace}/${op.name} succeeded at ` +
            `${iso(op.answeredAt)} while the webhook was down (${f.kind}, ${iso(f.startAt)}–${iso(f.endAt)})`,
          at: op.sentAt,
        });
      }
    }
  }
}
