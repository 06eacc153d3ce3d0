// 6. Index memory: the webhook's resident set (VmRSS) in index mode without and with many indexed dependents spread
// over many consumer workspaces. Creates `workspaces` extra consumer workspaces (each binding network.test.io and
// compute.test.io, as the topology's consumers do), restarts the webhook in index mode and reads its RSS ("without"),
// then creates `perWorkspace` VMs in each (every VM names its own VPC, which is not created: the index keeps names,
// not objects), waits until the index holds them, and reads the RSS again ("with").
//
// "Holds them": the webhook's gauge dependency_webhook_index_dependents has grown by the number of VMs created, and,
// checked from outside as well, after all the VMs one more VPC and a VM referencing it are created in the last
// workspace and a dry-run DELETE of that VPC is polled until kcp answers 409 (on a single shard the index reads one
// watch stream in resourceVersion order, so that denial means every earlier VM is indexed too). RSS is then read
// after a settle time (several readings, the median reported).
import { apply, createWorkspace, waitForBinding } from "../tools/kcp/api.ts";
import { VPCS, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import { createAll, ensureNamespace, pool } from "./populate.ts";
import { memoryOf, type Memory } from "./machine.ts";
import { restartWebhook, setProtection, type BenchEnv } from "./env.ts";
import { scrapeWebhook } from "./scrape.ts";
import { metricValue } from "./stats.ts";
import { measureAll, type CeilingRow, type HeapRow } from "./index-heap.ts";

export interface IndexMemoryOptions {
  workspaces: number;
  perWorkspace: number;
  concurrency: number;
  /** Pause before each RSS reading series. */
  settleMs: number;
  timeoutMs: number;
  /** Also measure the index alone in process (bench/index-heap.ts). */
  inProcess?: boolean;
}

export interface RssReading {
  /** Median of the readings. */
  rssMiB: number;
  readingsMiB: number[];
  peakRssMiB: number;
  /** kcp's RSS at the same moment, for scale. */
  kcpRssMiB: number;
  /**
   * The webhook's V8 heap in use (nodejs_heap_size_used_bytes), median of readings taken with the RSS ones: unlike
   * RSS it drops as soon as V8 collects, so it does not depend on when the heap last shrank.
   */
  heapUsedMiB: number;
}

export interface IndexMemoryResult {
  workspaces: number;
  perWorkspace: number;
  dependents: number;
  without: RssReading;
  with: RssReading;
  /** (RSS with − RSS without) / dependents, in bytes. */
  bytesPerDependent: number;
  /** (heap used with − heap used without) / dependents, in bytes. */
  heapBytesPerDependent: number;
  workspacesMs: number;
  createMs: number;
  /** From the last VM's create to the first denied dry-run DELETE of the VPC it references. */
  indexedAfterMs: number;
  /** dependency_webhook_index_dependents before the VMs and once they were all indexed (undefined: no such gauge). */
  indexGauge?: { before: number; after: number };
  /** dependency_webhook_index_memory_bytes (the ceiling's cost model) once they were all indexed, and the ceiling. */
  chargedBytes?: number;
  ceilingBytes?: number;
  /** bench/index-heap.ts: the index alone in one process (forced collections), and its ceiling's accuracy. */
  inProcess?: { rows: HeapRow[]; ceiling: CeilingRow[] };
  errors: string[];
}

const MEM_NS = "bench-mem";
const INDEX_GAUGE = "dependency_webhook_index_dependents";
const READINGS = 5;
const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));
const wsPath = (i: number): string => `root:bench-mem-${String(i).padStart(3, "0")}`;

export async function runIndexMemory(env: BenchEnv, opts: IndexMemoryOptions): Promise<IndexMemoryResult> {
  const errors: string[] = [];
  if (!env.protected) await setProtection(env, true);
  const t0 = Date.now();
  await createConsumers(env, opts.workspaces);
  const workspacesMs = Date.now() - t0;

  // A fresh index-mode webhook, so "without" and "with" differ only by the dependents it indexed.
  env.log("index memory: restarting the webhook in index mode");
  await restartWebhook(env, "index");
  const without = await readRss(env, opts.settleMs);
  const before = await indexSize(env);
  env.log(
    `index memory: webhook RSS without the dependents ${without.rssMiB.toFixed(1)} MiB, heap used ` +
      `${without.heapUsedMiB.toFixed(1)} MiB (index holds ${before})`,
  );

  const t1 = Date.now();
  await createDependents(env, opts);
  const createMs = Date.now() - t1;
  const dependents = opts.workspaces * opts.perWorkspace;
  const indexedAfterMs = await lastIsIndexed(env, wsPath(opts.workspaces - 1), opts.timeoutMs).catch((err) => {
    errors.push(`index check: ${(err as Error).message}`);
    return NaN;
  });
  // The VMs and the check VM.
  const after =
    before === undefined
      ? undefined
      : await indexHolds(env, before + dependents + 1, opts.timeoutMs).catch((err: unknown) => {
          errors.push(`index gauge: ${(err as Error).message}`);
          return NaN;
        });
  const withDeps = await readRss(env, opts.settleMs);
  const { chargedBytes, ceilingBytes } = await ceilingGauges(env);
  if (opts.inProcess) env.log("index memory: the index alone, in process (node bench/index-heap.ts)");
  const inProcess = opts.inProcess ? measureAll(16) : undefined;
  env.log(
    `index memory: webhook RSS with ${dependents} dependents ${withDeps.rssMiB.toFixed(1)} MiB, heap used ` +
      `${withDeps.heapUsedMiB.toFixed(1)} MiB`,
  );
  return {
    workspaces: opts.workspaces,
    perWorkspace: opts.perWorkspace,
    dependents,
    without,
    with: withDeps,
    bytesPerDependent: ((withDeps.rssMiB - without.rssMiB) * 2 ** 20) / dependents,
    heapBytesPerDependent: ((withDeps.heapUsedMiB - without.heapUsedMiB) * 2 ** 20) / dependents,
    workspacesMs,
    createMs,
    indexedAfterMs,
    ...(before !== undefined && after !== undefined ? { indexGauge: { before, after } } : {}),
    ...(chargedBytes !== undefined && ceilingBytes !== undefined ? { chargedBytes, ceilingBytes } : {}),
    ...(inProcess ? { inProcess } : {}),
    errors,
  };
}

/** `n` consumer workspaces that bind both providers' APIs (test/fixtures/consumer-bindings.yaml), 8 at a time. */
async function createConsumers(env: BenchEnv, n: number): Promise<void> {
  env.log(`index memory: creating ${n} consumer workspaces that bind both providers' APIs`);
  const bindings = readFileSync(path.join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8");
  await pool(
    Array.from({ length: n }, (_, i) => i),
    8,
    async (i) => {
      await createWorkspace(env.kcp.admin, wsPath(i));
      const ws = env.kcp.ws(wsPath(i));
      await apply(ws, bindings, env.topo.vars);
      await waitForBinding(ws, "network.test.io");
      await waitForBinding(ws, "compute.test.io");
      await ensureNamespace(ws, MEM_NS);
    },
  );
}

/** `perWorkspace` VMs in each workspace, one workspace after another, `concurrency` POSTs in flight. */
async function createDependents(env: BenchEnv, opts: IndexMemoryOptions): Promise<void> {
  for (let i = 0; i < opts.workspaces; i++) {
    const vms = Array.from({ length: opts.perWorkspace }, (_, j) => {
      const id = String(j).padStart(5, "0");
      return vm(`vm-${id}`, { vpc: `vpc-${id}` }, MEM_NS);
    });
    await createAll(env.kcp.ws(wsPath(i)), vms, opts.concurrency);
    if ((i + 1) % 10 === 0 || i === opts.workspaces - 1)
      env.log(`index memory: ${(i + 1) * opts.perWorkspace} VMs in ${i + 1} workspaces`);
  }
}

/** Waits until the webhook's index gauge reaches `want`; returns the value it read. */
async function indexHolds(env: BenchEnv, want: number, timeoutMs: number): Promise<number> {
  return waitFor(
    `the index to hold ${want} dependents`,
    async () => {
      const n = await indexSize(env);
      return n !== undefined && n >= want ? n : undefined;
    },
    { timeoutMs, intervalMs: 500 },
  );
}

/** Creates a VPC, then a VM referencing it, and polls a dry-run DELETE of the VPC until 409; returns the ms taken. */
async function lastIsIndexed(env: BenchEnv, workspace: string, timeoutMs: number): Promise<number> {
  const ws = env.kcp.ws(workspace);
  await createAll(ws, [vpc("mem-check-vpc", MEM_NS)]);
  await createAll(ws, [vm("mem-check-vm", { vpc: "mem-check-vpc" }, MEM_NS)]);
  const started = Date.now();
  await waitFor(
    "a DELETE of the VPC the last VM references to be denied",
    async () => {
      const r = await tryDelete(ws, `${at(VPCS, MEM_NS)}/mem-check-vpc`, { dryRun: true });
      return (!r.allowed && r.status === 409) || undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
  return Date.now() - started;
}

/** What the webhook's ceiling says it holds (its cost model) and its limit; undefined without those gauges. */
async function ceilingGauges(env: BenchEnv): Promise<{ chargedBytes?: number; ceilingBytes?: number }> {
  const samples = await scrapeWebhook(env);
  const gauge = (name: string): number | undefined =>
    samples.some((s) => s.name === name) ? metricValue(samples, name) : undefined;
  return {
    chargedBytes: gauge("dependency_webhook_index_memory_bytes"),
    ceilingBytes: gauge("dependency_webhook_index_memory_limit_bytes"),
  };
}

/** The webhook's dependency_webhook_index_dependents, or undefined when it exports no such gauge. */
async function indexSize(env: BenchEnv): Promise<number | undefined> {
  const samples = await scrapeWebhook(env);
  return samples.some((s) => s.name === INDEX_GAUGE) ? metricValue(samples, INDEX_GAUGE) : undefined;
}

async function readRss(env: BenchEnv, settleMs: number): Promise<RssReading> {
  await sleep(settleMs);
  const readings: Memory[] = [];
  const heap: number[] = [];
  for (let i = 0; i < READINGS; i++) {
    if (i > 0) await sleep(1_000);
    const m = memoryOf(env.bins.webhook?.proc.pid);
    if (m) readings.push(m);
    heap.push(metricValue(await scrapeWebhook(env), "nodejs_heap_size_used_bytes") / 2 ** 20);
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  return {
    rssMiB: median(readings.map((r) => r.rssMiB)),
    heapUsedMiB: median(heap),
    readingsMiB: readings.map((r) => r.rssMiB),
    peakRssMiB: readings.at(-1)?.peakRssMiB ?? NaN,
    kcpRssMiB: memoryOf(env.kcp.process.pid)?.rssMiB ?? NaN,
  };
}
