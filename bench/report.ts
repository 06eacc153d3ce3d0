// The readable side of a run: plain-text tables on stdout. The JSON file holds the raw samples.
import type { LookupMode } from "../tools/kcp/topology.ts";
import { finalizerTeardownTable } from "./finalizer-tables.ts";
import { cpuTable, latencyTable, pageSizeTable, ratioTable } from "./latency-tables.ts";
import { delayTable, indexMemoryTable, memoryTable, ruleTable, teardownTable } from "./phase-tables.ts";
import { errorsOf, type BenchReport } from "./results.ts";
import { localTargetsTable } from "./lt-kcp-table.ts";
import { table } from "./table.ts";
import { targetCells } from "./targets.ts";

export const HEADINGS = {
  latency: "1. DELETE latency vs. dependents (ms)",
  ratios: "1b. Ratios",
  cpu: "1c. CPU per operation (ms): where the time goes",
  pageSize: "1d. The webhook's lookup code in-process, by page size (ms; kcp's list counters per lookup)",
  teardown: "2. Namespace teardown",
  finalizerTeardown: "2b. Teardown with a slow backend: kcp's deletion and kubectl dependencies teardown",
  rule: "3. Rule to protection (ms)",
  memory: "4. Memory (MiB, VmRSS / peak VmHWM)",
  delay: "5. Index delay: a write in kcp → the webhook decides with it (ms)",
  indexMemory: "6. Index memory: the webhook's RSS with many indexed dependents (index mode)",
  targets: "7. Targets",
  localTargets: "8. Local targets on kcp: one dependent export's consumers",
} as const;

export function render(rep: BenchReport): string {
  const m = rep.machine;
  const out = [
    `kcp-dependency-controller benchmark — ${rep.date} (${rep.mode}, ${rep.durationS.toFixed(0)} s)`,
    `command: ${rep.command}`,
    `machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}; ${m.kcp}`,
    `load average: start ${m.loadAverageAtStart.map((v) => v.toFixed(2)).join(" ")}, end ${m.loadAverageAtEnd
      .map((v) => v.toFixed(2))
      .join(" ")}`,
    ...rep.notes.map((n) => `note: ${n}`),
  ];
  if (rep.latency) {
    const modes = rep.lookupModes.filter((mode) => rep.latency?.some((l) => l.mode === mode));
    const by = (mode: LookupMode) => rep.latency?.filter((l) => l.mode === mode) ?? [];
    for (const mode of modes) {
      out.push("", `${HEADINGS.latency} — lookup=${mode}`, latencyTable(by(mode)));
    }
    out.push("~ webhook decision: from its histogram, p50/p95/p99 interpolated inside buckets, mean exact (sum/count)");
    for (const mode of modes) out.push("", `${HEADINGS.ratios} — lookup=${mode}`, ratioTable(by(mode)));
    out.push("call overhead = protected allowed mean − unprotected mean − webhook decision mean (kcp → webhook → kcp)");
    for (const mode of modes) out.push("", `${HEADINGS.cpu} — lookup=${mode}`, cpuTable(by(mode)));
    out.push("CPU from /proc/<pid>/stat (kcp, webhook) and process.cpuUsage (client) around each request; 10 ms ticks");
    if (rep.latency.some((l) => l.pageSizeProbe)) out.push("", HEADINGS.pageSize, pageSizeTable(rep.latency));
  }
  if (rep.teardown) out.push("", HEADINGS.teardown, teardownTable(rep.teardown));
  if (rep.finalizerTeardown) out.push("", HEADINGS.finalizerTeardown, finalizerTeardownTable(rep.finalizerTeardown));
  if (rep.rule) {
    out.push("", HEADINGS.rule, ruleTable(rep.rule));
    out.push("index mode: the time to the first denial includes the webhook listing the VM type (a new watch)");
  }
  if (rep.memory) out.push("", HEADINGS.memory, memoryTable(rep.memory));
  if (rep.delay) {
    out.push("", HEADINGS.delay, delayTable(rep.delay));
    out.push(
      "delay = the VM create's response → the start of the first dry-run DELETE of its VPC answered 409; resolution " +
        "one poll round trip; live mode has no index (its figure is the probe's floor)",
    );
  }
  if (rep.indexMemory) out.push("", HEADINGS.indexMemory, indexMemoryTable(rep.indexMemory));
  if (rep.localTargets) out.push("", HEADINGS.localTargets, localTargetsTable(rep.localTargets));
  const targets = targetCells(rep);
  out.push("", HEADINGS.targets, table(targets.headers, targets.rows, targets.headers.length));
  out.push(
    "figures only (noisy on a shared machine; nothing fails on them); a target measured at other sizes than its own " +
      "(N=10000, 2000 pairs, 100 × 1000 dependents) names the sizes it ran; delay: n samples, how many were " +
      "denied at the first poll, and the resolution (one dry-run DELETE round trip, p50)",
  );
  const errors = errorsOf(rep);
  if (errors.length > 0) out.push("", `errors (${errors.length}):`, ...errors.slice(0, 20).map((e) => `  ${e}`));
  return out.join("\n");
}
