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
import { parseFieldPath } from "../src/fieldpath/fieldpath.ts";
import type { Lookup } from "../src/webhook/admission.ts";
import { DEFAULT_PAGE_SIZE, LiveDependentFinder } from "../src/webhook/deletion/live.ts";
import { VPCS, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import type { LookupMode } from "../tools/kcp/topology.ts";
import {
  cacheWait,
  countItems,
  cpuMsOf,
  createAll,
  listCounters,
  ensureNamespace,
  scrapeKcp,
  scrapeWebhook,
  setProtection,
  useLookup,
  type BenchEnv,
  type ListCounters,
} from "./env.ts";
import {
  histogram,
  histogramDelta,
  ms,
  now,
  summarize,
  summarizeHistogram,
  type Histogram,
  type HistogramSummary,
  type Sample,
  type Summary,
} from "./stats.ts";

export const LATENCY_NS = "bench-lat";
const HELD_VPC = "held-vpc";
const DECISION = "dependency_webhook_decision_duration_seconds";
const LOOKUP = "dependency_webhook_lookup_duration_seconds";

export interface LatencyOptions {
  ns: number[];
  /** Allowed DELETEs per N with protection on, and as many with it off. */
  deletes: number;
  /** Denied DELETEs per N (protection on only: without the webhook the delete would go through). */
  denied: number;
  /** Bare LISTs per N, spread over all blocks. */
  lists: number;
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

export const SERIES = [
  "protectedAllowed",
  "protectedDenied",
  "unprotected",
  "bareList",
  "afterWriteDelete",
  "afterWriteList",
] as const;
export type Series = (typeof SERIES)[number];

export interface CpuPerOp {
  kcp: number;
  webhook: number;
  client: number;
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

export interface PageSizeProbe {
  limit: number;
  samplesMs: number[];
  summary: Summary;
  cpuMsPerOp: CpuPerOp;
  /** kcp's list counters per LIST (all pages) for this page size; undefined without kubectl. */
  kcpPerList?: ListCounters;
}

export interface CacheWait {
  reads: number;
  waitMs: number;
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

/** Accumulates CPU used by kcp, the webhook and this process across many operations of one kind. */
class CpuMeter {
  private ops = 0;
  private readonly total: CpuPerOp = { kcp: 0, webhook: 0, client: 0 };
  private readonly env: BenchEnv;

  constructor(env: BenchEnv) {
    this.env = env;
  }

  private read(): CpuPerOp {
    const c = process.cpuUsage();
    return {
      kcp: cpuMsOf(this.env.kcp.process.pid),
      webhook: cpuMsOf(this.env.bins.webhook?.proc.pid),
      client: (c.user + c.system) / 1000,
    };
  }

  /** Runs `fn`, adds its CPU to the totals and returns its wall time in ms with its result. */
  async time<T>(fn: () => Promise<T>): Promise<[number, T]> {
    const before = this.read();
    const t = now();
    const result = await fn();
    const wall = ms(t);
    const after = this.read();
    this.ops++;
    for (const k of ["kcp", "webhook", "client"] as const) this.total[k] += after[k] - before[k];
    return [wall, result];
  }

  perOp(): CpuPerOp {
    const d = this.ops || NaN;
    return { kcp: this.total.kcp / d, webhook: this.total.webhook / d, client: this.total.client / d };
  }
}

const empty = (): Histogram => ({ buckets: [], sum: 0, count: 0 });
const add = (a: Histogram, b: Histogram): Histogram => {
  const counts = new Map(a.buckets.map((x) => [x.le, x.count]));
  for (const x of b.buckets) counts.set(x.le, (counts.get(x.le) ?? 0) + x.count);
  return {
    buckets: [...counts.entries()].map(([le, count]) => ({ le, count })).sort((x, y) => x.le - y.le),
    sum: a.sum + b.sum,
    count: a.count + b.count,
  };
};

/** Splits `total` into `parts` near-equal shares. */
const shares = (total: number, parts: number): number[] =>
  Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));

const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** One N: samples, CPU meters and decision histograms, filled block by block. */
class Step {
  readonly samples = Object.fromEntries(SERIES.map((k) => [k, [] as number[]])) as Record<Series, number[]>;
  readonly cpu: Record<Series, CpuMeter>;
  readonly errors: string[] = [];
  readonly toggleMs: number[] = [];
  allowed = empty();
  denied = empty();
  afterWrite = empty();
  lookup = empty();
  settledWait: CacheWait | undefined = { reads: 0, waitMs: 0 };
  afterWriteWait: CacheWait | undefined = { reads: 0, waitMs: 0 };

  addWait(which: "settledWait" | "afterWriteWait", w: CacheWait | undefined): void {
    const cur = this[which];
    this[which] = cur && w ? { reads: cur.reads + w.reads, waitMs: cur.waitMs + w.waitMs } : undefined;
  }

  constructor(env: BenchEnv) {
    this.cpu = Object.fromEntries(SERIES.map((k) => [k, new CpuMeter(env)])) as Record<Series, CpuMeter>;
  }

  async time<T>(series: Series, fn: () => Promise<T>): Promise<T> {
    const [wall, result] = await this.cpu[series].time(fn);
    this.samples[series].push(wall);
    return result;
  }
}

function delta(after: Sample[], before: Sample[], name: string, labels: Record<string, string> = {}): Histogram {
  return histogramDelta(histogram(after, name, labels), histogram(before, name, labels));
}

export async function runLatency(env: BenchEnv, opts: LatencyOptions): Promise<LatencyResult[]> {
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
  if (!env.protected) await setProtection(env, true);
  return results;
}

const LIST_PATH = (env: BenchEnv): string =>
  `/clusters/${env.topo.clusters.consumer1}/apis/compute.test.io/v1/namespaces/${LATENCY_NS}/virtualmachines`;

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
  const allowedShares = shares(opts.deletes, 2);
  const deniedShares = shares(opts.denied, 2);
  const afterShares = shares(opts.afterWrite, 2);
  const listShares = shares(opts.lists, 4);
  for (const [b, on] of blocks.entries()) {
    if (on !== env.protected) step.toggleMs.push(await setProtection(env, on));
    const half = b < 2 ? 0 : 1;
    await runBlock(env, step, {
      on,
      tag: `${n}-${mode[0]}-${b}`,
      allowed: allowedShares[half] ?? 0,
      denied: on ? (deniedShares[half] ?? 0) : 0,
      afterWrite: on ? (afterShares[half] ?? 0) : 0,
      lists: listShares[b] ?? 0,
      settleMs: opts.settleMs,
      concurrency: opts.concurrency,
    });
  }
  return toResult(n, mode, vmsListed, step);
}

interface Block {
  on: boolean;
  /** Unique per N, mode and block: names the block's VPCs. */
  tag: string;
  allowed: number;
  denied: number;
  afterWrite: number;
  lists: number;
  settleMs: number;
  concurrency: number;
}

async function runBlock(env: BenchEnv, step: Step, blk: Block): Promise<void> {
  const ws = env.consumer;
  const vpcPath = (name: string) => `${at(VPCS, LATENCY_NS)}/${name}`;
  const bareList = () => env.webhookIdentity.listPages(LIST_PATH(env), () => undefined, { limit: DEFAULT_PAGE_SIZE });
  const { on, tag } = blk;
  const names = Array.from({ length: blk.allowed }, (_, i) => `del-${tag}-${i}`);
  const afterNames = Array.from({ length: blk.afterWrite }, (_, i) => `aw-${tag}-${i}`);
  await createAll(
    ws,
    [...names, ...afterNames].map((name) => vpc(name, LATENCY_NS)),
    blk.concurrency,
  );
  // Warm up the connections on both hops (not recorded, outside the metrics window), then let the cache settle.
  if (names[0]) await tryDelete(ws, vpcPath(names[0]), { dryRun: true });
  await bareList();
  await sleep(blk.settleMs);
  const before = on ? await scrapeWebhook(env) : [];
  const kcpBefore = on ? scrapeKcp(env) : [];
  for (let i = 0; i < Math.max(blk.allowed, blk.denied, blk.lists); i++) {
    const name = names[i];
    if (name !== undefined) {
      const r = await step.time(on ? "protectedAllowed" : "unprotected", () => tryDelete(ws, vpcPath(name)));
      if (!r.allowed) step.errors.push(`DELETE ${name}: expected allowed, got ${r.status} ${r.message}`);
      await sleep(blk.settleMs);
    }
    if (i < blk.denied) {
      const r = await step.time("protectedDenied", () => tryDelete(ws, vpcPath(HELD_VPC)));
      if (r.allowed || r.status !== 409) {
        step.errors.push(`DELETE ${HELD_VPC}: expected 409, got ${r.allowed ? "allowed" : `${r.status} ${r.message}`}`);
        if (r.allowed) await createAll(ws, [vpc(HELD_VPC, LATENCY_NS)]);
        await sleep(blk.settleMs);
      }
    }
    if (i < blk.lists) await step.time("bareList", () => bareList());
  }
  if (!on) return;
  const middle = await scrapeWebhook(env);
  const kcpMiddle = scrapeKcp(env);
  // Right after an unrelated write: POST a VPC (no webhook call), then at once the timed request.
  for (const [i, name] of afterNames.entries()) {
    await createAll(ws, [vpc(`w-${tag}-${i}-a`, LATENCY_NS)]);
    const r = await step.time("afterWriteDelete", () => tryDelete(ws, vpcPath(name)));
    if (!r.allowed) step.errors.push(`DELETE ${name}: expected allowed, got ${r.status} ${r.message}`);
    await createAll(ws, [vpc(`w-${tag}-${i}-b`, LATENCY_NS)]);
    await step.time("afterWriteList", () => bareList());
  }
  const after = await scrapeWebhook(env);
  step.addWait("settledWait", cacheWait(kcpMiddle, kcpBefore));
  step.addWait("afterWriteWait", cacheWait(scrapeKcp(env), kcpMiddle));
  step.allowed = add(step.allowed, delta(middle, before, DECISION, { outcome: "allowed" }));
  step.denied = add(step.denied, delta(middle, before, DECISION, { outcome: "denied" }));
  step.afterWrite = add(step.afterWrite, delta(after, middle, DECISION, { outcome: "allowed" }));
  step.lookup = add(step.lookup, delta(after, before, LOOKUP));
}

/**
 * The webhook's own lookup (LiveDependentFinder, src/webhook/deletion/live.ts) run in this process with the webhook's
 * identity at each page size, interleaved, for a VPC nothing references (every page is read); kcp's list counters
 * are scraped around each lookup. This is the A/B bench for the finder's page size.
 */
async function probePageSizes(env: BenchEnv, opts: LatencyOptions): Promise<PageSizeProbe[]> {
  const path = parseFieldPath(".spec.vpcRef.name");
  if (!path.ok) throw new Error(path.error);
  const lookup: Lookup = {
    consumer: env.topo.clusters.consumer1,
    dependent: {
      group: "compute.test.io",
      version: "v1",
      resource: "virtualmachines",
      kind: "VirtualMachine",
      apiExportName: "compute.test.io",
      exportCluster: env.topo.clusters.compute,
    },
    namespace: LATENCY_NS,
    name: "nobody-references-this-vpc",
    fieldPaths: [path.path],
    enforcement: "Deny",
    rules: ["bench"],
  };
  const probe = opts.pageSizes.map((limit) => ({
    finder: new LiveDependentFinder({ base: env.webhookIdentity, pageSize: limit }),
    limit,
    samplesMs: [] as number[],
    cpu: new CpuMeter(env),
    counters: [] as (ListCounters | undefined)[],
  }));
  for (let i = 0; i < opts.pageSizeLists; i++) {
    for (const p of probe) {
      const before = scrapeKcp(env);
      const [wall, found] = await p.cpu.time(() => p.finder.find(lookup, 10));
      if (found.dependents.length > 0) throw new Error(`lookup found ${found.dependents.length} dependents, want none`);
      p.samplesMs.push(wall);
      p.counters.push(listCounters(scrapeKcp(env), before));
    }
  }
  return probe.map((p) => {
    const known = p.counters.filter((c): c is ListCounters => c !== undefined);
    const mean = (k: keyof ListCounters) => known.reduce((a, c) => a + c[k], 0) / known.length;
    return {
      limit: p.limit,
      samplesMs: p.samplesMs,
      summary: summarize(p.samplesMs),
      cpuMsPerOp: p.cpu.perOp(),
      ...(known.length === p.counters.length && known.length > 0
        ? {
            kcpPerList: {
              cacheLists: mean("cacheLists"),
              cacheEvaluated: mean("cacheEvaluated"),
              cacheReturned: mean("cacheReturned"),
              storageLists: mean("storageLists"),
              storageFetched: mean("storageFetched"),
            },
          }
        : {}),
    };
  });
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
