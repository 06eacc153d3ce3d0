// The benchmark's world: a real single-shard kcp started by the test harness, the product topology, the controller
// and the webhook as child processes with their own identities (exactly as the e2e suite runs them), the VM rule,
// and a small probe (a VPC referenced by a VM) used to tell when protection is on or off.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadKcpConnection } from "../src/kcp/kubeconfig.ts";
import { ApiError, isApiError, type RestClient } from "../src/kcp/rest.ts";
import { apply, type KObject } from "../tools/kcp/api.ts";
import { kcpBinDir, startKcp, type Kcp } from "../tools/kcp/harness.ts";
import { waitFor } from "../tools/kcp/process.ts";
import {
  Binaries,
  IDENTITIES,
  PATHS,
  TOKENS,
  setupTopology,
  vmRule,
  type BinariesFrom,
  type LookupMode,
  type Topology,
} from "../tools/kcp/topology.ts";
import { RULES, VMS, VPCS, VWC_PATH, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import { metricValue, parseMetrics, type Sample } from "./stats.ts";

export const PROBE_NS = "bench-probe";
export const PROBE_VPC = `${at(VPCS, PROBE_NS)}/probe-vpc`;

export interface BenchEnv {
  kcp: Kcp;
  topo: Topology;
  bins: Binaries;
  /** kcp-admin in root:consumer1, addressed by workspace path the way kubectl is: the client whose DELETEs we time. */
  consumer: RestClient;
  /** The webhook's own identity at the kcp base URL: lists through it take the webhook's exact path. */
  webhookIdentity: RestClient;
  /** Whether the VM rule is on (kept by setProtection): a webhook restarted in another mode must protect the probe. */
  protected: boolean;
  log: (line: string) => void;
}

export async function startBench(
  log: (line: string) => void,
  kcpArgs: string[] = [],
  lookup: LookupMode = "index",
  from: BinariesFrom = "src",
): Promise<BenchEnv> {
  log(`starting kcp (single shard: its own front door, no separate front-proxy) ${kcpArgs.join(" ")}`.trim());
  const kcp = await startKcp({ tokens: TOKENS, extraArgs: kcpArgs });
  try {
    // Both modes' read grants: the webhook runs in either mode on this kcp, and the bare LIST and the page-size probe
    // list consumer workspaces with the webhook's identity, which index mode alone does not allow.
    const topo = await setupTopology(kcp, { log: (l) => log(`  ${l}`), lookup: "both" });
    const bins = new Binaries(kcp, lookup, from);
    log(`starting the webhook (--lookup=${lookup}) and the controller as child processes, from ${from}/`);
    await bins.startWebhook();
    await bins.startController();
    const kubeconfig = kcp.kubeconfigFor(IDENTITIES.webhook.token, PATHS.depCtrl, "bench-webhook-identity.kubeconfig");
    const env: BenchEnv = {
      kcp,
      topo,
      bins,
      consumer: kcp.ws(PATHS.consumer1),
      webhookIdentity: loadKcpConnection({ kubeconfig }).base,
      protected: false,
      log,
    };
    await ensureNamespace(env.consumer, PROBE_NS);
    await createAll(env.consumer, [vpc("probe-vpc", PROBE_NS), vm("probe-vm", { vpc: "probe-vpc" }, PROBE_NS)]);
    await setProtection(env, true);
    return env;
  } catch (err) {
    await kcp.stop();
    throw err;
  }
}

export async function stopBench(env: BenchEnv): Promise<void> {
  env.webhookIdentity.close();
  await env.bins.stop();
  await env.kcp.stop();
}

/**
 * Turns protection on (apply the VM rule: the controller installs the VWC) or off (delete the rule: the controller
 * removes the VWC, the product's own path; stopping the controller and deleting the VWC by hand would be the same
 * request path for kcp). Waits until kcp's admission chain agrees, judged by a dry-run DELETE of the probe VPC.
 * Returns the milliseconds it took.
 */
export async function setProtection(env: BenchEnv, on: boolean): Promise<number> {
  const started = Date.now();
  const compute = env.kcp.ws(PATHS.compute);
  if (on) await apply(compute, vmRule(env.topo.vars));
  else await compute.request("DELETE", `${RULES}/vm-dependencies`).catch(ignore404);
  env.protected = on;
  const network = env.kcp.ws(PATHS.network);
  await waitFor(`the VWC to be ${on ? "installed" : "removed"}`, async () => {
    const present = (await network.getOptional(VWC_PATH)) !== undefined;
    return present === on || undefined;
  });
  await waitForProbe(env, on);
  return Date.now() - started;
}

/** Waits until a dry-run DELETE of the probe VPC is denied with 409 (`on`) or allowed. */
export async function waitForProbe(env: BenchEnv, on: boolean): Promise<void> {
  await waitFor(
    `the probe VPC to be ${on ? "protected" : "unprotected"}`,
    async () => {
      const r = await tryDelete(env.consumer, PROBE_VPC, { dryRun: true });
      return (on ? !r.allowed && r.status === 409 : r.allowed) || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
}

/**
 * Runs the webhook in `mode` (a no-op when it already does): stops the process and starts it again with the other
 * --lookup on the same port, so kcp and the controller stay as they are. With protection on, waits until the probe
 * VPC is denied again (index mode: the VM type is indexed). Returns the milliseconds it took.
 */
export async function useLookup(env: BenchEnv, mode: LookupMode): Promise<number> {
  if (env.bins.lookup === mode && env.bins.webhook?.proc.running) return 0;
  env.log(`switching the webhook to --lookup=${mode}`);
  return restartWebhook(env, mode);
}

/** Stops the webhook and starts it again in `mode` on the same port; waits as useLookup does. */
export async function restartWebhook(env: BenchEnv, mode: LookupMode): Promise<number> {
  const started = Date.now();
  env.bins.lookup = mode;
  await env.bins.webhook?.proc.stop();
  await env.bins.startWebhook();
  if (env.protected) await waitForProbe(env, true);
  return Date.now() - started;
}

function ignore404(err: unknown): void {
  if (!isApiError(err, 404)) throw err;
}

export async function scrapeWebhook(env: BenchEnv): Promise<Sample[]> {
  const url = `${env.bins.webhook?.healthUrl ?? ""}/metrics`;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return parseMetrics(await res.text());
}

export async function ensureNamespace(ws: RestClient, name: string): Promise<void> {
  try {
    await ws.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  } catch (err) {
    if (!isApiError(err, 409)) throw err;
  }
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

const collectionOf = (obj: KObject): string =>
  at(obj.kind === "VPC" ? VPCS : obj.kind === "VirtualMachine" ? VMS : "", obj.metadata.namespace ?? "default");

/** POSTs every object (VPCs and VMs), `concurrency` in flight; an object that already exists counts as created. */
export async function createAll(ws: RestClient, objects: readonly KObject[], concurrency = 24): Promise<void> {
  await pool(objects, concurrency, async (obj) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await ws.request("POST", collectionOf(obj), { body: obj });
        return;
      } catch (err) {
        if (isApiError(err, 409)) return;
        const transient = !(err instanceof ApiError) || err.status === 429 || err.status >= 500;
        if (!transient || attempt >= 6) throw err;
        await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
      }
    }
  });
}

/** Number of objects in a collection, counted through a paginated list. */
export async function countItems(ws: RestClient, collection: string): Promise<number> {
  let n = 0;
  await ws.listPages(collection, (page) => void (n += page.items?.length ?? 0), { limit: 500 });
  return n;
}

export interface Memory {
  rssMiB: number;
  peakRssMiB: number;
}

/** VmRSS and VmHWM of a process from /proc (the binaries' pids are their node processes: no wrapper shell). */
export function memoryOf(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rssMiB: kib("VmRSS") / 1024, peakRssMiB: kib("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

export interface MachineFacts {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  kcp: string;
  kcpServerVersion: string;
  loadAverageAtStart: number[];
}

export async function machineFacts(env: BenchEnv): Promise<MachineFacts> {
  let kcpVersion = "unknown";
  try {
    kcpVersion = execFileSync(path.join(kcpBinDir(), "kcp"), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // reported as unknown
  }
  const server = await env.kcp.admin.get<{ gitVersion?: string }>("/version").catch(() => ({ gitVersion: "unknown" }));
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    kcp: kcpVersion,
    kcpServerVersion: server.gitVersion ?? "unknown",
    loadAverageAtStart: os.loadavg(),
  };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in ms; resolution one clock tick (10 ms), so sum many ops. */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
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
