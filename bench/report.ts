// The readable side of a run: plain-text tables on stdout. The JSON file holds the raw samples.
import { DEFAULT_PAGE_SIZE } from "../src/webhook/lookup.ts";
import type { MachineFacts } from "./env.ts";
import type { LatencyResult } from "./latency.ts";
import type { MemorySnapshot } from "./memory.ts";
import type { RuleResult } from "./rule.ts";
import type { Summary } from "./stats.ts";
import type { TeardownResult } from "./teardown.ts";

export interface BenchReport {
  date: string;
  command: string;
  mode: "smoke" | "full" | "custom";
  machine: MachineFacts & { loadAverageAtEnd: number[] };
  notes: string[];
  options: Record<string, unknown>;
  durationS: number;
  latency?: LatencyResult[];
  teardown?: TeardownResult[];
  rule?: RuleResult;
  memory?: MemorySnapshot[];
}

export const HEADINGS = {
  latency: "1. DELETE latency vs. dependents (ms)",
  ratios: "1b. Ratios",
  cpu: "1c. CPU per operation (ms): where the time goes",
  pageSize: "1d. The webhook's lookup code in-process, by page size (ms; kcp's list counters per lookup)",
  teardown: "2. Namespace teardown",
  rule: "3. Rule to protection (ms)",
  memory: "4. Memory (MiB, VmRSS / peak VmHWM)",
} as const;

const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : "–");
const x = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "–");

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 || i === 1 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
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

export function teardownTable(results: TeardownResult[]): string {
  const rows = results.map((r) => [
    String(r.n),
    r.protected ? "webhook on" : "webhook off",
    f(r.teardownMs / 1000, 2),
    r.protected ? x(r.teardownMs / (results.find((o) => o.n === r.n && !o.protected)?.teardownMs ?? NaN)) : "",
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
      "",
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

export function ruleTable(r: RuleResult): string {
  const rows = [
    sumRow("rule created", "→ VWC installed (controller)", r.summary.vwcMs),
    sumRow("rule created", "→ first denied DELETE", r.summary.deniedMs),
    sumRow("rule deleted", "→ DELETE allowed again", r.summary.offMs),
  ];
  return table(["from", "to", "n", "p50", "p95", "p99", "mean"], rows);
}

export function memoryTable(snaps: MemorySnapshot[]): string {
  const m = (v: { rssMiB: number; peakRssMiB: number } | undefined) =>
    v ? `${f(v.rssMiB)} / ${f(v.peakRssMiB)}` : "–";
  const rows = snaps.map((s) => [s.label, "", String(s.rulesLoaded), m(s.webhook), m(s.controller), m(s.kcp)]);
  return table(["moment", "", "rules", "webhook", "controller", "kcp (for scale)"], rows);
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
    out.push("", HEADINGS.latency, latencyTable(rep.latency));
    out.push("~ webhook decision: from its histogram, p50/p95/p99 interpolated inside buckets, mean exact (sum/count)");
    out.push("", HEADINGS.ratios, ratioTable(rep.latency));
    out.push("call overhead = protected allowed mean − unprotected mean − webhook decision mean (kcp → webhook → kcp)");
    out.push("", HEADINGS.cpu, cpuTable(rep.latency));
    out.push("CPU from /proc/<pid>/stat (kcp, webhook) and process.cpuUsage (client) around each request; 10 ms ticks");
    if (rep.latency.some((l) => l.pageSizeProbe)) out.push("", HEADINGS.pageSize, pageSizeTable(rep.latency));
  }
  if (rep.teardown) out.push("", HEADINGS.teardown, teardownTable(rep.teardown));
  if (rep.rule) out.push("", HEADINGS.rule, ruleTable(rep.rule));
  if (rep.memory) out.push("", HEADINGS.memory, memoryTable(rep.memory));
  const errors = [
    ...(rep.latency ?? []).flatMap((l) => l.errors.map((e) => `latency N=${l.n}: ${e}`)),
    ...(rep.teardown ?? []).flatMap((t) => (t.error ? [`teardown N=${t.n}: ${t.error}`] : [])),
    ...(rep.rule?.errors ?? []),
  ];
  if (errors.length > 0) out.push("", `errors (${errors.length}):`, ...errors.slice(0, 20).map((e) => `  ${e}`));
  return out.join("\n");
}
