// The performance targets, read off a run's results: one row per target with index mode's figure, live mode's beside it,
// the goal and whether index mode met it. Figures only: nothing here fails a run (timings on a shared machine are
// noisy; the verdict is for the reader). A target whose phase did not run, or ran at other sizes, says so.
import type { LookupMode } from "../tools/kcp/topology.ts";
import { finalizerTargetRows } from "./finalizer-tables.ts";
import type { LatencyResult } from "./latency.ts";
import type { BenchReport } from "./results.ts";
import { histogramQuantile, type Histogram, type HistogramSummary } from "./stats.ts";
import { f, x, type TargetRow } from "./table.ts";
import type { TeardownResult } from "./teardown.ts";

const verdict = (v: number, ok: (v: number) => boolean): string =>
  Number.isFinite(v) ? (ok(v) ? "met" : "MISSED") : "–";
const MODES: LookupMode[] = ["index", "live"];

/** The buckets of several histogram summaries added up (cumulative counts by upper bound). */
function merged(parts: HistogramSummary[]): Histogram {
  const counts = new Map<number, number>();
  for (const p of parts)
    for (const b of p.buckets) {
      const le = b.le === "+Inf" ? Infinity : b.le;
      counts.set(le, (counts.get(le) ?? 0) + b.count);
    }
  const count = parts.reduce((a, p) => a + p.count, 0);
  const sum = parts.reduce((a, p) => a + (p.count > 0 ? (p.meanMs * p.count) / 1000 : 0), 0);
  return {
    buckets: [...counts.entries()].map(([le, c]) => ({ le, count: c })).sort((a, b) => a.le - b.le),
    sum,
    count,
  };
}

function decisionRows(rep: BenchReport): TargetRow[] {
  const latency = rep.latency ?? [];
  if (latency.length === 0) return [];
  const top = Math.max(...latency.map((l) => l.n));
  const at = (mode: LookupMode) => {
    const l = latency.find((r) => r.n === top && r.mode === mode);
    if (!l) return { text: "–", p99: NaN, share: NaN };
    const h = merged([l.webhook.allowed, l.webhook.denied, l.webhook.afterWrite]);
    const within = h.buckets.find((b) => b.le === 0.005)?.count ?? NaN;
    const share = h.count > 0 ? within / h.count : NaN;
    const p99 = histogramQuantile(h, 0.99) * 1000;
    return { text: `${f(p99)} ms (${f(share * 100)}% ≤ 5 ms of ${h.count})`, p99, share };
  };
  const [index, live] = [at("index"), at("live")];
  const rows: TargetRow[] = [
    {
      target: `(a) webhook decision p99, N=${top} (histogram, all decisions)`,
      index: index.text,
      live: live.text,
      goal: "< 5 ms",
      verdict: verdict(index.share, (s) => s >= 0.99),
    },
  ];
  for (const n of [...new Set(latency.map((l) => l.n))].sort((a, b) => a - b)) {
    rows.push(reviewCpuRow(latency, n));
    const ratio = (mode: LookupMode) =>
      latency.find((l) => l.n === n && l.mode === mode)?.ratios.allowedOverUnprotected.p50 ?? NaN;
    rows.push({
      target: `(a) DELETE p50 protected / unprotected, N=${n}`,
      index: x(ratio("index")),
      live: x(ratio("live")),
      goal: "≤ 1.20×",
      verdict: verdict(ratio("index"), (r) => r <= 1.2),
    });
  }
  return rows;
}

/**
 * The webhook's CPU per allowed DELETE at N (from /proc, 10 ms ticks summed over the series), with its CPU per
 * unprotected DELETE beside it: what it spends meanwhile on anything else (watches, timers, GC), for scale.
 */
function reviewCpuRow(latency: LatencyResult[], n: number): TargetRow {
  const cpu = (mode: LookupMode) => latency.find((l) => l.n === n && l.mode === mode)?.cpuMsPerOp;
  const text = (mode: LookupMode) => {
    const c = cpu(mode);
    return c ? `${f(c.protectedAllowed.webhook, 2)} ms (unprotected: ${f(c.unprotected.webhook, 2)} ms)` : "–";
  };
  return {
    target: `(a) webhook CPU per allowed DELETE review, N=${n}`,
    index: text("index"),
    live: text("live"),
    goal: "≤ 0.5 ms",
    verdict: verdict(cpu("index")?.protectedAllowed.webhook ?? NaN, (v) => v <= 0.5),
  };
}

function teardownRows(rep: BenchReport): TargetRow[] {
  const td = rep.teardown ?? [];
  if (td.length === 0) return [];
  const top = Math.max(...td.map((t) => t.n));
  const ratio = (mode: LookupMode): number => {
    const on = td.find((t) => t.n === top && t.mode === mode && t.protected);
    const off = td.find((t) => t.n === top && t.mode === mode && !t.protected);
    return on && off ? on.teardownMs / off.teardownMs : NaN;
  };
  const text = (mode: LookupMode): string => {
    const s = (on: boolean): TeardownResult | undefined =>
      td.find((t) => t.n === top && t.mode === mode && t.protected === on);
    const on = s(true);
    const off = s(false);
    return on && off ? `${x(ratio(mode))} (${f(on.teardownMs / 1000)} s / ${f(off.teardownMs / 1000)} s)` : "–";
  };
  return [
    {
      target: `(b) namespace teardown, ${top} VPC/VM pairs: webhook on / off`,
      index: text("index"),
      live: text("live"),
      goal: "≤ 1.50×",
      verdict: verdict(ratio("index"), (r) => r <= 1.5),
    },
  ];
}

function ruleRows(rep: BenchReport): TargetRow[] {
  if (!rep.rule || rep.rule.length === 0) return [];
  const p99 = (mode: LookupMode) => rep.rule?.find((r) => r.mode === mode)?.summary.deniedMs.p99 ?? NaN;
  const n = rep.rule[0]?.trials.length ?? 0;
  return [
    {
      target: `(c) rule created → first denied DELETE, p99 of ${n} trials`,
      index: `${f(p99("index"), 0)} ms`,
      live: `${f(p99("live"), 0)} ms`,
      goal: "≤ 2000 ms",
      verdict: verdict(p99("index"), (v) => v <= 2000),
    },
  ];
}

function delayRows(rep: BenchReport): TargetRow[] {
  const d = rep.delay ?? [];
  if (d.length === 0) return [];
  const pick = (mode: LookupMode, load: "quiet" | "teardown") => d.find((s) => s.mode === mode && s.load === load);
  const text = (mode: LookupMode, load: "quiet" | "teardown"): string => {
    const s = pick(mode, load);
    return s && s.delay.n > 0
      ? `${f(s.delay.p50)} / ${f(s.delay.p99)} ms (n=${s.delay.n}, ${s.firstPoll} at 1st poll, res. ${f(s.rtt.p50)} ms)`
      : "–";
  };
  const worst = (load: "quiet" | "teardown") => {
    const s = pick("index", load);
    return s && s.delay.n > 0 ? Math.max(s.delay.p50, s.delay.p99) : NaN;
  };
  const loaded = pick("index", "teardown");
  return [
    {
      target: "(d) index delay p50 / p99, quiet kcp",
      index: text("index", "quiet"),
      live: text("live", "quiet"),
      goal: "< 100 ms",
      verdict: verdict(worst("quiet"), (v) => v < 100),
    },
    {
      target: `(d) index delay p50 / p99, during a ${loaded?.loadPairs ?? "–"}-pair teardown`,
      index: text("index", "teardown"),
      live: "–",
      goal: "< 100 ms",
      verdict: verdict(worst("teardown"), (v) => v < 100),
    },
  ];
}

function memoryRows(rep: BenchReport): TargetRow[] {
  const rows: TargetRow[] = [];
  const idle = (mode: LookupMode) =>
    rep.memory?.find((m) => m.lookup === mode && m.label.startsWith("idle"))?.webhook?.rssMiB ?? NaN;
  if (rep.memory)
    rows.push({
      target: "(e) webhook RSS idle, 1 rule",
      index: `${f(idle("index"))} MiB`,
      live: `${f(idle("live"))} MiB`,
      goal: "≤ 80 MiB",
      verdict: verdict(idle("index"), (v) => v <= 80),
    });
  rows.push(...oneWorkspaceMemoryRows(rep));
  const im = rep.indexMemory;
  if (im) {
    rows.push({
      target: `(e) webhook RSS with ${im.dependents} indexed dependents over ${im.workspaces} workspaces`,
      index: `${f(im.with.rssMiB)} MiB (without: ${f(im.without.rssMiB)} MiB)`,
      live: "–",
      goal: "≤ 250 MiB",
      verdict: verdict(im.with.rssMiB, (v) => v <= 250),
    });
    rows.push({
      target: "(e) bytes per indexed dependent: (with − without) / dependents",
      index: f(im.bytesPerDependent, 0),
      live: "–",
      goal: "(report)",
      verdict: "–",
    });
  }
  return rows;
}

/**
 * The webhook's RSS after the latency phase's largest N (all its VMs in one workspace, the memory phase's snapshot
 * then) against its idle RSS in the same mode: (after − idle) / VMs is a rough figure per indexed dependent, RSS
 * being a matter of when V8 last grew or shrank its heap.
 */
function oneWorkspaceMemoryRows(rep: BenchReport): TargetRow[] {
  const top = Math.max(...(rep.latency ?? []).map((l) => l.n));
  const text = (mode: LookupMode): string => {
    const snap = (prefix: string) => rep.memory?.find((m) => m.lookup === mode && m.label.startsWith(prefix));
    const [idle, after] = [snap("idle")?.webhook?.rssMiB, snap("after checking")?.webhook?.rssMiB];
    const vms = rep.latency?.find((l) => l.n === top && l.mode === mode)?.vmsListed;
    if (idle === undefined || after === undefined || !vms) return "–";
    return `${f(after)} MiB (idle ${f(idle)} MiB): ${f(((after - idle) * 2 ** 20) / vms, 0)} B per VM`;
  };
  if (!Number.isFinite(top) || !rep.memory?.some((m) => m.label.startsWith("after checking"))) return [];
  return [
    {
      target: `(e) webhook RSS with N=${top} VMs in one workspace (latency phase)`,
      index: text("index"),
      live: text("live"),
      goal: "(report)",
      verdict: "–",
    },
  ];
}

export function targetRows(rep: BenchReport): TargetRow[] {
  return [
    ...decisionRows(rep),
    ...teardownRows(rep),
    ...finalizerTargetRows(rep.finalizerTeardown),
    ...ruleRows(rep),
    ...delayRows(rep),
    ...memoryRows(rep),
  ];
}

/** The targets as table cells: target, index, live, goal, verdict. */
export function targetCells(rep: BenchReport): { headers: string[]; rows: string[][] } {
  const shown = MODES.filter((m) => rep.lookupModes.includes(m));
  return {
    headers: ["target", ...shown.map((m) => `lookup=${m}`), "goal", "index mode"],
    rows: targetRows(rep).map((r) => [r.target, ...shown.map((m) => r[m]), r.goal, r.verdict]),
  };
}
