// The tables of phases 2–6: namespace teardown, rule to protection, memory, index delay and index memory.
import type { DelaySeries } from "./delay.ts";
import type { IndexMemoryResult } from "./index-memory.ts";
import { heapTable } from "./index-heap.ts";
import type { MemorySnapshot } from "./memory.ts";
import type { RuleResult } from "./rule.ts";
import type { TeardownResult } from "./teardown.ts";
import { f, sumRow, table, x } from "./table.ts";

/** A protected teardown over the unprotected one of the same N and mode. */
export function teardownRatio(results: TeardownResult[], r: TeardownResult): number {
  const off = results.find((o) => o.n === r.n && o.mode === r.mode && !o.protected);
  return r.teardownMs / (off?.teardownMs ?? NaN);
}

export function teardownTable(results: TeardownResult[]): string {
  const sorted = [...results].sort((a, b) => a.n - b.n || a.mode.localeCompare(b.mode));
  const rows = sorted.map((r) => [
    String(r.n),
    `${r.mode}, ${r.protected ? "webhook on" : "webhook off"}`,
    f(r.teardownMs / 1000, 2),
    r.protected ? x(teardownRatio(results, r)) : "",
    String(r.webhookCalls.allowed),
    String(r.webhookCalls.denied),
    String(r.webhookCalls.errored),
    f(r.decisions.totalMs / 1000, 2),
    f(r.decisions.meanMs),
    r.kcpCacheWait ? `${f(r.kcpCacheWait.waitMs / 1000, 2)} (${r.kcpCacheWait.reads})` : "–",
    r.error ? "TIMEOUT" : "",
  ]);
  return table(
    [
      "pairs",
      "lookup",
      "gone after s",
      "on/off",
      "calls allowed",
      "denied",
      "errored",
      "decision total s",
      "decision mean ms",
      "kcp cache wait s (VM LISTs)",
      "",
    ],
    rows,
  );
}

export function ruleTable(results: RuleResult[]): string {
  const rows = results.flatMap((r) => [
    sumRow(r.mode, "rule created → VWC installed (controller)", r.summary.vwcMs),
    sumRow("", "rule created → first denied DELETE", r.summary.deniedMs),
    sumRow("", "rule deleted → DELETE allowed again", r.summary.offMs),
  ]);
  return table(["lookup", "from → to", "n", "p50", "p95", "p99", "mean"], rows);
}

export function memoryTable(snaps: MemorySnapshot[]): string {
  const m = (v: { rssMiB: number; peakRssMiB: number } | undefined) =>
    v ? `${f(v.rssMiB)} / ${f(v.peakRssMiB)}` : "–";
  const rows = snaps.map((s) => [s.label, s.lookup, String(s.rulesLoaded), m(s.webhook), m(s.controller), m(s.kcp)]);
  return table(["moment", "lookup", "rules", "webhook", "controller", "kcp (for scale)"], rows);
}

export function delayTable(series: DelaySeries[]): string {
  const rows = series.map((d) => [
    d.mode,
    d.load === "quiet"
      ? "quiet kcp"
      : `during a teardown of ${d.loadPairs} pairs (${f((d.teardownMs ?? NaN) / 1000)} s)`,
    String(d.delay.n),
    f(d.delay.p50),
    f(d.delay.p95),
    f(d.delay.p99),
    f(d.delay.max),
    `${d.firstPoll}/${d.delay.n}`,
    f(d.rtt.p50),
  ]);
  return table(
    ["lookup", "load", "n", "p50", "p95", "p99", "max", "denied at 1st poll", "resolution: poll round trip p50"],
    rows,
  );
}

export function indexMemoryTable(r: IndexMemoryResult): string {
  const mib = (v: number) => `${f(v)} MiB`;
  const rows = [
    ["without the dependents (fresh index-mode webhook)", mib(r.without.rssMiB), mib(r.without.kcpRssMiB)],
    [`with ${r.dependents} dependents in ${r.workspaces} workspaces`, mib(r.with.rssMiB), mib(r.with.kcpRssMiB)],
    ["bytes per dependent: (with − without) / dependents", f(r.bytesPerDependent, 0), ""],
    [
      "heap used without / with (nodejs_heap_size_used_bytes)",
      `${mib(r.without.heapUsedMiB)} / ${mib(r.with.heapUsedMiB)}`,
      "",
    ],
    ["heap bytes per dependent", f(r.heapBytesPerDependent, 0), ""],
    ["peak (VmHWM) at the end", mib(r.with.peakRssMiB), ""],
  ];
  return [
    table(["webhook VmRSS (median of 5 readings, 1 s apart)", "", "kcp (for scale)"], rows),
    `creating ${r.workspaces} workspaces took ${f(r.workspacesMs / 1000)} s, the ${r.dependents} VMs ` +
      `${f(r.createMs / 1000)} s; the last VM's VPC was denied ${f(r.indexedAfterMs)} ms after its create; ` +
      (r.indexGauge
        ? `dependency_webhook_index_dependents ${r.indexGauge.before} → ${r.indexGauge.after}`
        : "the webhook has no index-size gauge: that denial is the only check that the index holds every VM"),
    ...(r.chargedBytes !== undefined && r.ceilingBytes !== undefined
      ? [
          `the ceiling's model charged ${mib(r.chargedBytes / 2 ** 20)} (${f(r.chargedBytes / r.dependents, 0)} B per ` +
            `dependent) of ${mib(r.ceilingBytes / 2 ** 20)}; heap used grew ${mib(r.with.heapUsedMiB - r.without.heapUsedMiB)}`,
        ]
      : []),
    ...(r.inProcess
      ? [
          "",
          "The index alone, in one process (bench/index-heap.ts, forced collections):",
          heapTable(r.inProcess.rows, r.inProcess.ceiling),
        ]
      : []),
  ].join("\n");
}
