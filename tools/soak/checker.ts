// The invariant checker: reads a History (kcp's own watch events and the workload's request log) and reports
// violations of I1–I6 and the races inside the consistency window. Pure, and independent of the product: it imports
// nothing from src/, parses rules and field paths itself, and orders events on a shard by kcp's resourceVersions.
// Each invariant has its own file under invariants/; this runs them in a fixed order, so reports are stable.
import type { History } from "./history.ts";
import { checkCollateral } from "./invariants/collateral.ts";
import { checkDeclined } from "./invariants/consent.ts";
import { checkConvergence } from "./invariants/convergence.ts";
import { checkDenials } from "./invariants/denials.ts";
import { checkFailClosed } from "./invariants/fail-closed.ts";
import type { CheckResult, Judging } from "./invariants/findings.ts";
import { checkDeletes, checkDryRunDeletes } from "./invariants/protection.ts";
import { checkTenantEndpoints } from "./invariants/tenant-endpoints.ts";
import { Timeline } from "./invariants/timeline.ts";

export { WORKSPACE_RESOURCE, workspaceRecheckMs } from "./invariants/convergence.ts";
export type { CheckResult, Invariant, Race, Violation } from "./invariants/findings.ts";
export { RULE_RESOURCE, SKIP_ANNOTATION } from "./invariants/timeline.ts";

export function check(h: History): CheckResult {
  const tl = new Timeline(h);
  const out: CheckResult = {
    violations: [],
    races: [],
    deletedWithWorkspace: 0,
    checkedDeletes: 0,
    checkedDenials: 0,
    checkedWhileDown: 0,
    checkedCollateral: 0,
    refusedUnavailable: 0,
    refused: { unavailable: 0, "webhook failure": 0, "lookup failed": 0, "no answer": 0 },
    excusedHostile: 0,
    checkedHostile: 0,
    checkedSlowUploads: 0,
    checkedProvider: 0,
    checkedDeclined: 0,
    readyShare: readyShare(h, tl),
  };
  const j: Judging = { h, tl, out, ws: (c) => h.workspaces[c] ?? c };
  checkDeletes(j);
  checkDryRunDeletes(j);
  checkDenials(j);
  checkConvergence(j);
  checkFailClosed(j);
  checkCollateral(j);
  checkDeclined(j);
  checkTenantEndpoints(j);
  return out;
}

/** Per rule, the share of the run it was Ready. */
function readyShare(h: History, tl: Timeline): Record<string, number> {
  const out: Record<string, number> = {};
  const end = h.endedAt || (h.watches.at(-1)?.recvAt ?? h.startedAt);
  for (const [key, versions] of tl.rules) {
    let ready = 0;
    versions.forEach((v, i) => {
      const from = Math.max(v.recvAt, h.startedAt);
      const to = Math.min(versions[i + 1]?.recvAt ?? end, end);
      if (v.ready && !v.deleted && to > from) ready += to - from;
    });
    const [cluster = "", , , name = ""] = key.split("|");
    out[`${h.workspaces[cluster] ?? cluster}/${name}`] = end > h.startedAt ? ready / (end - h.startedAt) : 0;
  }
  return out;
}
