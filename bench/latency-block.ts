// One block of phase 1: timed DELETEs (allowed, denied) and bare LISTs with protection on or off, settled and right
// after a write, with the webhook's decision histograms and kcp's cache waits scraped around them.
import { DEFAULT_PAGE_SIZE } from "../src/webhook/deletion/live.ts";
import { VPCS, at, tryDelete, vpc } from "../tools/kcp/objects.ts";
import { CpuMeter } from "./cpu-meter.ts";
import { cacheWait, scrapeKcp, scrapeWebhook } from "./scrape.ts";
import { createAll } from "./populate.ts";
import { type BenchEnv } from "./env.ts";
import { histogram, histogramDelta, type Histogram, type Sample } from "./stats.ts";

export const LATENCY_NS = "bench-lat";
export const HELD_VPC = "held-vpc";
const DECISION = "dependency_webhook_decision_duration_seconds";
const LOOKUP = "dependency_webhook_lookup_duration_seconds";

export const SERIES = [
  "protectedAllowed",
  "protectedDenied",
  "unprotected",
  "bareList",
  "afterWriteDelete",
  "afterWriteList",
] as const;
export type Series = (typeof SERIES)[number];

export interface CacheWait {
  reads: number;
  waitMs: number;
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

const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** One N: samples, CPU meters and decision histograms, filled block by block. */
export class Step {
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

export const LIST_PATH = (env: BenchEnv): string =>
  `/clusters/${env.topo.clusters.consumer1}/apis/compute.test.io/v1/namespaces/${LATENCY_NS}/virtualmachines`;

export interface Block {
  on: boolean;
  /** Unique per N, mode and block: names the block's VPCs. */
  tag: string;
  allowed: number;
  denied: number;
  afterWrite: number;
  lists: number;
  /** N ≥ --large-n: warm up with one page of VMs, and no bare LIST right after a write. */
  large: boolean;
  /** Untimed dry-run DELETEs before the timed series (LatencyOptions.warmReviews); at least one is made. */
  warmReviews: number;
  settleMs: number;
  concurrency: number;
}

export async function runBlock(env: BenchEnv, step: Step, blk: Block): Promise<void> {
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
  if (names[0])
    for (let i = 0; i < Math.max(1, blk.warmReviews); i++) await tryDelete(ws, vpcPath(names[0]), { dryRun: true });
  if (blk.large)
    await env.webhookIdentity.listPages(LIST_PATH(env), () => false, { limit: DEFAULT_PAGE_SIZE }); // one page
  else await bareList();
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
    if (blk.large) continue;
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
