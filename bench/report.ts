// The readable side of a run: plain-text tables on stdout. The JSON file holds the raw samples.
import { DEFAULT_PAGE_SIZE } from "../src/webhook/deletion/live.ts";
import type { LookupMode } from "../tools/kcp/topology.ts";
import type { DelaySeries } from "./delay.ts";
import type { MachineFacts } from "./env.ts";
import type { IndexMemoryResult } from "./index-memory.ts";
import type { LatencyResult } from "./latency.ts";
import type { MemorySnapshot } from "./memory.ts";
import type { RuleResult } from "./rule.ts";
import type { Summary } from "./stats.ts";
import type { TeardownResult } from "./teardown.ts";
import { targetCells } from "./targets.ts";

export interface BenchReport {
  date: string;
  command: string;
  mode: "smoke" | "full" | "custom";
  /** The webhook's lookup modes compared in this run. */
  lookupModes: LookupMode[];
  machine: MachineFacts & { loadAverageAtEnd: number[] };
  notes: string[];
  options: Record<string, unknown>;
  durationS: number;
  latency?: LatencyResult[];
  teardown?: TeardownResult[];
  delay?: DelaySeries[];
  rule?: RuleResult[];
  memory?: MemorySnapshot[];
  indexMemory?: IndexMemoryResult;
}

export const HEADINGS = {
  latency: "1. DELETE latency vs. dependents (ms)",
  ratios: "1b. Ratios",
  cpu: "1c. CPU per operation (ms): where the time goes",
  pageSize: "1d. The webhook's lookup code in-process, by page size (ms; kcp's list counters per lookup)",
  teardown: "2. Namespace teardown",
  rule: "3. Rule to protection (ms)",
  memory: "4. Memory (MiB, VmRSS / peak VmHWM)",
  delay: "5. Index delay: a write in kcp → the webhook decides with it (ms)",
  indexMemory: "6. Index memory: the webhook's RSS with many indexed dependents (index mode)",
  targets: "7. Targets (issue 14)",
} as const;

export const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : "–");
export const x = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "–");

/** A plain-text table; the first `left` columns are left-aligned, the rest (figures) right-aligned. */
export function table(headers: string[], rows: string[][], left = 2): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i < left ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(headers), rule.trimEnd(), ...rows.map(line)].join("\n");
}

const sumRow = (n: string, what: string, s: Summary): string[] => [
  n,
  what,
  String(s.n),
  f(s.p50),
  f(s.p95),
  f(s.p99),
  f(s.mean),
];

export function latencyTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  for (const r of results) {
    const n = String(r.n);
    rows.push(sumRow(n, "DELETE protected, allowed", r.summary.protectedAllowed));
    rows.push(sumRow("", "DELETE protected, denied (ref on last page)", r.summary.protectedDenied));
    rows.push(sumRow("", "DELETE unprotected (kcp alone)", r.summary.unprotected));
    rows.push(sumRow("", `bare paginated LIST of the VMs (limit ${DEFAULT_PAGE_SIZE})`, r.summary.bareList));
    rows.push(sumRow("", "DELETE protected, allowed, right after a write", r.summary.afterWriteDelete));
    rows.push(sumRow("", "bare LIST, right after a write", r.summary.afterWriteList));
    for (const [label, h] of [
      ["webhook decision, allowed ~", r.webhook.allowed],
      ["webhook decision, denied ~", r.webhook.denied],
      ["webhook decision, allowed right after a write ~", r.webhook.afterWrite],
    ] as const) {
      rows.push(["", label, String(h.count), f(h.p50Ms), f(h.p95Ms), f(h.p99Ms), f(h.meanMs)]);
    }
  }
  return table(["N", "series", "n", "p50", "p95", "p99", "mean"], rows);
}

export function pageSizeTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  for (const r of results) {
    for (const [i, p] of (r.pageSizeProbe ?? []).entries()) {
      const k = p.kcpPerList;
      rows.push([
        i === 0 ? String(r.n) : "",
        String(p.limit),
        String(p.summary.n),
        f(p.summary.p50),
        f(p.summary.mean),
        f(p.cpuMsPerOp.kcp),
        f(p.cpuMsPerOp.client),
        k ? f(k.cacheLists, 0) : "–",
        k ? f(k.cacheEvaluated, 0) : "–",
        k ? f(k.storageLists, 0) : "–",
        k ? f(k.storageFetched, 0) : "–",
      ]);
    }
  }
  return table(
    [
      "N",
      "limit",
      "n",
      "p50",
      "mean",
      "kcp CPU",
      "lookup CPU",
      "cache pages",
      "cache objs evaluated",
      "etcd pages",
      "etcd objs fetched",
    ],
    rows,
  );
}

export function ratioTable(results: LatencyResult[]): string {
  const rows = results.map((r) => [
    String(r.n),
    "",
    x(r.ratios.allowedOverUnprotected.p50),
    x(r.ratios.allowedOverUnprotected.p95),
    x(r.ratios.allowedOverUnprotected.p99),
    x(r.ratios.deniedOverUnprotected.p50),
    x(r.ratios.decisionOverList.allowedMean),
    x(r.ratios.decisionOverList.deniedMean),
    x(r.ratios.afterWriteOverSettled),
    f(r.summary.protectedAllowed.mean - r.summary.unprotected.mean - r.webhook.allowed.meanMs),
  ]);
  return table(
    [
      "N",
      "",
      "prot/unprot p50",
      "p95",
      "p99",
      "denied/unprot p50",
      "decision/LIST mean (allowed)",
      "(denied)",
      "after-write/settled p50",
      "call overhead ms",
    ],
    rows,
  );
}

export function cpuTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  const row = (n: string, what: string, c: { kcp: number; webhook: number; client: number }, wall: number) => [
    n,
    what,
    f(wall),
    f(c.kcp),
    f(c.webhook),
    f(c.client),
  ];
  for (const r of results) {
    const c = r.cpuMsPerOp;
    rows.push(row(String(r.n), "DELETE protected, allowed", c.protectedAllowed, r.summary.protectedAllowed.mean));
    rows.push(row("", "DELETE protected, denied", c.protectedDenied, r.summary.protectedDenied.mean));
    rows.push(row("", "DELETE unprotected", c.unprotected, r.summary.unprotected.mean));
    rows.push(row("", `bare LIST (limit ${DEFAULT_PAGE_SIZE})`, c.bareList, r.summary.bareList.mean));
    rows.push(row("", "DELETE allowed, after a write", c.afterWriteDelete, r.summary.afterWriteDelete.mean));
    rows.push(row("", "bare LIST, after a write", c.afterWriteList, r.summary.afterWriteList.mean));
  }
  const per = (x: { reads: number; waitMs: number }) => `${f(x.waitMs / x.reads)} ms over ${x.reads} reads`;
  const waits = results.flatMap((r) =>
    r.kcpCacheWait
      ? [
          `N=${r.n}: kcp watch-cache freshness wait per VM LIST (lookups and bare LISTs): ` +
            `settled ${per(r.kcpCacheWait.settled)}; right after a write ${per(r.kcpCacheWait.afterWrite)}`,
        ]
      : [],
  );
  return [table(["N", "operation", "wall mean", "kcp CPU", "webhook CPU", "client CPU"], rows), ...waits].join("\n");
}

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
    ["peak (VmHWM) at the end", mib(r.with.peakRssMiB), ""],
  ];
  return [
    table(["webhook VmRSS (median of 5 readings, 1 s apart)", "", "kcp (for scale)"], rows),
    `creating ${r.workspaces} workspaces took ${f(r.workspacesMs / 1000)} s, the ${r.dependents} VMs ` +
      `${f(r.createMs / 1000)} s; the last VM's VPC was denied ${f(r.indexedAfterMs)} ms after its create; ` +
      (r.indexGauge
        ? `dependency_webhook_index_dependents ${r.indexGauge.before} → ${r.indexGauge.after}`
        : "the webhook has no index-size gauge: that denial is the only check that the index holds every VM"),
  ].join("\n");
}

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
  const targets = targetCells(rep);
  out.push("", HEADINGS.targets, table(targets.headers, targets.rows, targets.headers.length));
  out.push(
    "figures only (noisy on a shared machine; nothing fails on them); a target measured at other sizes than issue " +
      "14's (N=10000, 2000 pairs, 100 × 1000 dependents) names the sizes it ran; delay: n samples, how many were " +
      "denied at the first poll, and the resolution (one dry-run DELETE round trip, p50)",
  );
  const errors = errorsOf(rep);
  if (errors.length > 0) out.push("", `errors (${errors.length}):`, ...errors.slice(0, 20).map((e) => `  ${e}`));
  return out.join("\n");
}

/** Everything that went wrong in a run (a non-empty list makes the run exit 1). */
export function errorsOf(rep: BenchReport): string[] {
  return [
    ...(rep.latency ?? []).flatMap((l) => l.errors.map((e) => `latency N=${l.n} lookup=${l.mode}: ${e}`)),
    ...(rep.teardown ?? []).flatMap((t) => (t.error ? [`teardown N=${t.n} lookup=${t.mode}: ${t.error}`] : [])),
    ...(rep.delay ?? []).flatMap((d) => d.errors.map((e) => `index delay lookup=${d.mode} ${d.load}: ${e}`)),
    ...(rep.rule ?? []).flatMap((r) => r.errors.map((e) => `rule lookup=${r.mode}: ${e}`)),
    ...(rep.indexMemory?.errors ?? []).map((e) => `index memory: ${e}`),
  ];
}
