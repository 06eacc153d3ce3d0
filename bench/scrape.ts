// Metrics read around a measurement: the webhook's /metrics, and kcp's (its watch cache and list counters).
import { execFileSync } from "node:child_process";
import { type BenchEnv } from "./env.ts";
import { metricValue, parseMetrics, type Sample } from "./stats.ts";

export async function scrapeWebhook(env: BenchEnv): Promise<Sample[]> {
  const url = `${env.bins.webhook?.healthUrl ?? ""}/metrics`;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return parseMetrics(await res.text());
}

/**
 * kcp's own /metrics (as shard admin, through kubectl: the RestClient speaks JSON only). Empty when kubectl is
 * missing: the figures that need it are then reported as unknown.
 */
export function scrapeKcp(env: BenchEnv): Sample[] {
  try {
    const text = execFileSync(
      "kubectl",
      [`--kubeconfig=${env.kcp.adminKubeconfig}`, "--context=shard-base", "get", "--raw", "/metrics"],
      { encoding: "utf8", maxBuffer: 256 * 2 ** 20, stdio: ["ignore", "pipe", "ignore"] },
    );
    return parseMetrics(text);
  } catch {
    return [];
  }
}

/** Time kcp's watch cache spent waiting to be fresh before serving consistent VM LISTs, between two scrapes. */
export function cacheWait(after: Sample[], before: Sample[]): { reads: number; waitMs: number } | undefined {
  if (after.length === 0 || before.length === 0) return undefined;
  const labels = { group: "compute.test.io", resource: "virtualmachines" };
  const d = (suffix: string) =>
    metricValue(after, `apiserver_watch_cache_read_wait_seconds_${suffix}`, labels) -
    metricValue(before, `apiserver_watch_cache_read_wait_seconds_${suffix}`, labels);
  return { reads: d("count"), waitMs: d("sum") * 1000 };
}

export interface ListCounters {
  /** Pages served from kcp's watch cache, and objects it looked at / returned for them. */
  cacheLists: number;
  cacheEvaluated: number;
  cacheReturned: number;
  /** Pages kcp delegated to etcd, and objects read from etcd for them. */
  storageLists: number;
  storageFetched: number;
}

/** kcp's list counters for the VM resource (any series whose labels name virtualmachines), `after − before`. */
export function listCounters(after: Sample[], before: Sample[]): ListCounters | undefined {
  if (after.length === 0 || before.length === 0) return undefined;
  const sum = (s: Sample[], name: string) =>
    s
      .filter((x) => x.name === name && Object.values(x.labels).some((v) => v.includes("virtualmachines")))
      .reduce((a, x) => a + x.value, 0);
  const d = (name: string) => sum(after, name) - sum(before, name);
  return {
    cacheLists: d("apiserver_cache_list_total"),
    cacheEvaluated: d("apiserver_cache_list_evaluated_objects_total"),
    cacheReturned: d("apiserver_cache_list_returned_objects_total"),
    storageLists: d("apiserver_storage_list_total"),
    storageFetched: d("apiserver_storage_list_fetched_objects_total"),
  };
}
