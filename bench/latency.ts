// 1. DELETE latency against the number of dependents. One namespace grows to N filler VMs (none references a target)
// plus one VM named to sort last that references `held-vpc`. For each N and each lookup mode (the webhook restarted
// with --lookup=index or live; which mode goes first alternates with N), in alternating blocks (protected, then
// unprotected, then unprotected, then protected: ABBA against drift), we time real DELETEs of fresh VPCs (allowed),
// DELETEs of held-vpc (denied; in live mode after the lookup reads the last page, in index mode from memory), and a
// bare paginated LIST of the VMs taken with the webhook's identity and URL (what a live lookup cannot beat). The
// webhook's own decision time comes from its metrics, scraped around each block.
//
// kcp serves these LISTs from its watch cache as consistent reads: right after any write the cache first waits to
// be confirmed fresh (~100 ms here). So the main series are "settled" (each timed request comes ≥ settleMs after the
// last write), and two extra series time an allowed DELETE and a bare LIST right after an unrelated write (a busy kcp).
import { vm, vpc } from "../tools/kcp/objects.ts";
import type { LookupMode } from "../tools/kcp/topology.ts";
import type { CpuPerOp } from "./cpu-meter.ts";
import { countItems, createAll, ensureNamespace } from "./populate.ts";
import { useLookup, type BenchEnv } from "./env.ts";
import { checkIndexBudget, setAdmission } from "./latency-setup.ts";
import {
  HELD_VPC,
  LATENCY_NS,
  LIST_PATH,
  SERIES,
  Step,
  runBlock,
  type CacheWait,
  type Series,
} from "./latency-block.ts";
import { probePageSizes, type PageSizeProbe } from "./page-size-probe.ts";
import { summarize, summarizeHistogram, type HistogramSummary, type Summary } from "./stats.ts";

export { LATENCY_NS, SERIES, type CacheWait, type Series } from "./latency-block.ts";
export type { CpuPerOp } from "./cpu-meter.ts";
export type { PageSizeProbe } from "./page-size-probe.ts";

export interface LatencyOptions {
  ns: number[];
  /** Allowed DELETEs per N with protection on, and as many with it off. */
  deletes: number;
  /** Denied DELETEs per N (protection on only: without the webhook the delete would go through). */
  denied: number;
  /** Bare LISTs per N, spread over all blocks. */
  lists: number;
  /**
   * From this N on a bare LIST of all the VMs is costly (about 35 s at 100,000 on a loaded machine): at most
   * LARGE_N_LISTS timed, none right after a write, and each block warms up with one page instead of a whole LIST.
   */
  largeN: number;
  /**
   * Untimed dry-run DELETEs (allowed; through kcp, so in a protected block they reach the webhook as reviews) before
   * each block's timed series, the same count in both kinds of block. A fresh webhook process runs its review path in
   * V8's baseline tier for its first few hundred reviews (about twice the CPU of a warmed one, bench/README.md "Fourth
   * pass"); a webhook in service has served thousands. 0 keeps the single warm-up DELETE every block makes.
   */
  warmReviews: number;
  /** Allowed DELETEs and bare LISTs per N timed right after an unrelated write (protection on). */
  afterWrite: number;
  /** Pause after each write before the next timed request of the settled series. */
  settleMs: number;
  /** Page sizes compared by running the webhook's lookup code in-process at every N > 0, and lookups per size. */
  pageSizes: number[];
  pageSizeLists: number;
  concurrency: number;
  /** Lookup modes measured at every N, the webhook restarted between them. */
  modes: LookupMode[];
  /** Called after each (N, mode) step, with the webhook still in that mode (e.g. to read its memory). */
  afterStep?: (result: LatencyResult) => Promise<void>;
}

export interface LatencyResult {
  n: number;
  /** The webhook's --lookup during this step. */
  mode: LookupMode;
  /** VMs actually in the namespace: N fillers plus the one that references held-vpc. */
  vmsListed: number;
  samplesMs: Record<Series, number[]>;
  summary: Record<Series, Summary>;
  /** Decision histograms (settled allowed, settled denied, allowed right after a write) and all lookups. */
  webhook: {
    allowed: HistogramSummary;
    denied: HistogramSummary;
    afterWrite: HistogramSummary;
    lookup: HistogramSummary;
  };
  ratios: Ratios;
  /** Mean CPU ms per operation of kcp, the webhook and this client (from /proc and process.cpuUsage; 10 ms ticks). */
  cpuMsPerOp: Record<Series, CpuPerOp>;
  pageSizeProbe?: PageSizeProbe[];
  /**
   * kcp's watch-cache freshness wait for VM LISTs (webhook lookups and bare LISTs alike) in the protected blocks,
   * from kcp's apiserver_watch_cache_read_wait_seconds; undefined without kubectl.
   */
  kcpCacheWait?: { settled: CacheWait; afterWrite: CacheWait };
  toggleMs: number[];
  /** Restarting the webhook in this mode before the step (0 when it already ran in it). */
  switchMs?: number;
  errors: string[];
}

export interface Ratios {
  /** protected allowed / unprotected at p50, p95, p99. */
  allowedOverUnprotected: { p50: number; p95: number; p99: number };
  deniedOverUnprotected: { p50: number; p95: number; p99: number };
  /** webhook decision mean (exact, from sum/count) / bare LIST mean; p50 is bucket-resolution. */
  decisionOverList: { allowedMean: number; deniedMean: number; allowedP50: number };
  /** allowed DELETE right after a write / settled allowed DELETE, at p50. */
  afterWriteOverSettled: number;
}

export async function runLatency(env: BenchEnv, opts: LatencyOptions): Promise<LatencyResult[]> {
  checkIndexBudget(env, opts);
  const ws = env.consumer;
  await ensureNamespace(ws, LATENCY_NS);
  await createAll(ws, [vpc(HELD_VPC, LATENCY_NS), vm("zz-held-vm", { vpc: HELD_VPC }, LATENCY_NS)]);
  const results: LatencyResult[] = [];
  let have = 0;
  const sorted = [...opts.ns].sort((a, b) => a - b);
  for (const [idx, n] of sorted.entries()) {
    if (n > have) {
      env.log(`latency: creating VMs ${have}..${n - 1} in ${LATENCY_NS} (${opts.concurrency} in flight)`);
      const t = Date.now();
      const fillers = Array.from({ length: n - have }, (_, i) =>
        vm(`vm-${String(have + i).padStart(6, "0")}`, { vpc: "unrelated-vpc" }, LATENCY_NS),
      );
      await createAll(ws, fillers, opts.concurrency);
      env.log(`latency: created ${n - have} VMs in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      have = n;
    }
    const vmsListed = await countItems(env.webhookIdentity, LIST_PATH(env));
    // Both modes on the same VMs; which goes first alternates with N, so neither always runs on the warmer kcp.
    const order = idx % 2 === 0 ? opts.modes : [...opts.modes].reverse();
    const step: LatencyResult[] = [];
    for (const mode of order) {
      const switchMs = await useLookup(env, mode);
      const result = await measureMode(env, n, mode, vmsListed, opts);
      result.switchMs = switchMs;
      const s = result.summary;
      env.log(
        `latency N=${n} lookup=${mode}: protected allowed p50 ${s.protectedAllowed.p50.toFixed(1)} ms, ` +
          `unprotected p50 ${s.unprotected.p50.toFixed(1)} ms, bare LIST p50 ${s.bareList.p50.toFixed(1)} ms`,
      );
      step.push(result);
      await opts.afterStep?.(result);
    }
    // The page-size probe runs the live finder in this process: it does not depend on the webhook's mode.
    const host = step.find((r) => r.mode === "live") ?? step[0];
    if (host && n > 0 && opts.pageSizes.length > 0 && opts.pageSizeLists > 0) {
      env.log(`latency: lookup page-size probe at N=${n}: limits ${opts.pageSizes.join(", ")}`);
      host.pageSizeProbe = await probePageSizes(env, opts);
    }
    results.push(...opts.modes.flatMap((m) => step.filter((r) => r.mode === m)));
  }
  if (!env.protected) await setAdmission(env, true);
  return results;
}

/** One N in one lookup mode: four blocks, protected / unprotected / unprotected / protected (ABBA against drift). */
async function measureMode(
  env: BenchEnv,
  n: number,
  mode: LookupMode,
  vmsListed: number,
  opts: LatencyOptions,
): Promise<LatencyResult> {
  const step = new Step(env);
  const blocks: boolean[] = [true, false, false, true]; // ABBA
  const large = n >= opts.largeN;
  const allowedShares = shares(opts.deletes, 2);
  const deniedShares = shares(opts.denied, 2);
  const afterShares = shares(opts.afterWrite, 2);
  const listShares = shares(large ? Math.min(opts.lists, LARGE_N_LISTS) : opts.lists, 4);
  for (const [b, on] of blocks.entries()) {
    if (on !== env.protected) step.toggleMs.push(await setAdmission(env, on));
    const half = b < 2 ? 0 : 1;
    await runBlock(env, step, {
      on,
      tag: `${n}-${mode[0]}-${b}`,
      allowed: allowedShares[half] ?? 0,
      denied: on ? (deniedShares[half] ?? 0) : 0,
      afterWrite: on ? (afterShares[half] ?? 0) : 0,
      lists: listShares[b] ?? 0,
      large,
      warmReviews: opts.warmReviews,
      settleMs: opts.settleMs,
      concurrency: opts.concurrency,
    });
  }
  return toResult(n, mode, vmsListed, step);
}

function toResult(n: number, mode: LookupMode, vmsListed: number, step: Step): LatencyResult {
  const summary = Object.fromEntries(SERIES.map((k) => [k, summarize(step.samples[k])])) as Record<Series, Summary>;
  const webhook = {
    allowed: summarizeHistogram(step.allowed),
    denied: summarizeHistogram(step.denied),
    afterWrite: summarizeHistogram(step.afterWrite),
    lookup: summarizeHistogram(step.lookup),
  };
  const r = (a: Summary, b: Summary) => ({ p50: a.p50 / b.p50, p95: a.p95 / b.p95, p99: a.p99 / b.p99 });
  return {
    n,
    mode,
    vmsListed,
    samplesMs: step.samples,
    summary,
    webhook,
    ratios: {
      allowedOverUnprotected: r(summary.protectedAllowed, summary.unprotected),
      deniedOverUnprotected: r(summary.protectedDenied, summary.unprotected),
      decisionOverList: {
        allowedMean: webhook.allowed.meanMs / summary.bareList.mean,
        deniedMean: webhook.denied.meanMs / summary.bareList.mean,
        allowedP50: webhook.allowed.p50Ms / summary.bareList.p50,
      },
      afterWriteOverSettled: summary.afterWriteDelete.p50 / summary.protectedAllowed.p50,
    },
    cpuMsPerOp: Object.fromEntries(SERIES.map((k) => [k, step.cpu[k].perOp()])) as Record<Series, CpuPerOp>,
    ...(step.settledWait && step.afterWriteWait
      ? { kcpCacheWait: { settled: step.settledWait, afterWrite: step.afterWriteWait } }
      : {}),
    toggleMs: step.toggleMs,
    errors: step.errors,
  };
}

/** Timed bare LISTs per step at N ≥ largeN: one per block. */
export const LARGE_N_LISTS = 4;

/** Splits `total` into `parts` near-equal shares. */
const shares = (total: number, parts: number): number[] =>
  Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
