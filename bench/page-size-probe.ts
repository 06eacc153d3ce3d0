// Phase 1d: the webhook's live lookup run in this process at several page sizes, with kcp's list counters.
import { parseFieldPath } from "../src/fieldpath/fieldpath.ts";
import type { Lookup } from "../src/webhook/admission.ts";
import { LiveDependentFinder } from "../src/webhook/deletion/live.ts";
import { CpuMeter, type CpuPerOp } from "./cpu-meter.ts";
import { listCounters, scrapeKcp, type ListCounters } from "./scrape.ts";
import { type BenchEnv } from "./env.ts";
import { LATENCY_NS } from "./latency-block.ts";
import { summarize, type Summary } from "./stats.ts";

export interface PageSizeProbe {
  limit: number;
  samplesMs: number[];
  summary: Summary;
  cpuMsPerOp: CpuPerOp;
  /** kcp's list counters per LIST (all pages) for this page size; undefined without kubectl. */
  kcpPerList?: ListCounters;
}

/**
 * The webhook's own lookup (LiveDependentFinder, src/webhook/deletion/live.ts) run in this process with the webhook's
 * identity at each page size, interleaved, for a VPC nothing references (every page is read); kcp's list counters
 * are scraped around each lookup. This is the A/B bench for the finder's page size.
 */
export async function probePageSizes(
  env: BenchEnv,
  opts: { pageSizes: number[]; pageSizeLists: number },
): Promise<PageSizeProbe[]> {
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
