// I3, convergence: namespace and workspace deletions complete, protection returns after each fault, and nothing dies
// unasked.
import { keyOf } from "../history.ts";
import type { Judging } from "./findings.ts";
import { iso } from "./timeline.ts";

export const WORKSPACE_RESOURCE = "workspaces.tenancy.kcp.io";

/**
 * How long kcp itself may wait before it looks at a deleting workspace again: while the workspace's LogicalCluster is
 * still deleting its content, kcp v0.30.0 requeues the Workspace after a fifth of the LogicalCluster's age, at most
 * 10 minutes (pkg/reconciler/tenancy/workspace/workspace_reconcile_phase.go), so a 15-minute-old workspace whose
 * content is gone in a second still shows for 3 more minutes. The LogicalCluster is created with the Workspace, so
 * the Workspace's own creationTimestamp stands for it. No product code is on that path.
 */
export function workspaceRecheckMs(
  versions: readonly { object: Record<string, unknown> }[],
  deletedAt: number,
): number {
  const meta = versions[0]?.object["metadata"] as { creationTimestamp?: unknown } | undefined;
  const created = typeof meta?.creationTimestamp === "string" ? Date.parse(meta.creationTimestamp) : Number.NaN;
  if (!Number.isFinite(created) || created > deletedAt) return 0;
  return Math.min(10 * 60_000, (deletedAt - created) / 5);
}

export function checkConvergence(j: Judging): void {
  checkDeletionsComplete(j);
  checkProtectionReturns(j);
  checkNoUnaskedExits(j);
}

function checkDeletionsComplete({ h, tl, out, ws }: Judging): void {
  const B = h.boundMs;
  for (const op of h.ops) {
    if ((op.kind !== "delete-namespace" && op.kind !== "delete-workspace") || op.status < 200 || op.status >= 300)
      continue;
    const key =
      op.kind === "delete-namespace"
        ? keyOf({ cluster: op.cluster, resource: "namespaces", namespace: "", name: op.name })
        : keyOf({ cluster: "root", resource: WORKSPACE_RESOURCE, namespace: "", name: op.name });
    const versions = tl.objects.get(key) ?? [];
    const gone = versions.find((v) => v.type === "DELETED" && v.recvAt >= op.sentAt);
    const doneAt = gone?.recvAt ?? Number.POSITIVE_INFINITY;
    const bound = op.kind === "delete-workspace" ? B + workspaceRecheckMs(versions, op.sentAt) : B;
    if (doneAt - op.sentAt > bound && op.sentAt + bound <= h.endedAt) {
      out.violations.push({
        invariant: "I3",
        message:
          `${op.kind === "delete-namespace" ? `namespace ${ws(op.cluster)}/${op.name}` : `workspace ${op.workspace}`} ` +
          `deleted at ${iso(op.sentAt)} ${gone ? `took ${Math.round(doneAt - op.sentAt)} ms` : "never went away"} ` +
          `(bound ${bound} ms)`,
        at: op.sentAt,
      });
    }
  }
}

function checkProtectionReturns({ h, out }: Judging): void {
  const B = h.boundMs;
  const probes = h.ops.filter((o) => o.kind === "probe");
  for (const f of h.faults) {
    const back = probes.find((p) => p.sentAt >= f.endAt && p.status === 409);
    const late = back ? back.answeredAt - f.endAt > B : f.endAt + B <= h.endedAt;
    if (late) {
      out.violations.push({
        invariant: "I3",
        message: `protection did not return within ${B} ms after ${f.kind} (${f.target}) ended at ${iso(f.endAt)}`,
        at: f.endAt,
      });
    }
  }
}

function checkNoUnaskedExits({ h, out }: Judging): void {
  for (const e of h.exits) {
    if (!e.expected) {
      out.violations.push({
        invariant: "I3",
        message: `${e.process} exited with code ${e.code} at ${iso(e.at)} without being killed`,
        at: e.at,
      });
    }
  }
}
