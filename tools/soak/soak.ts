// One soak run on a SoakEnv: start the history recorder on every shard, the workload, the rule churn, the probes,
// the fault injector, the careless author, the hostile consumer and the hostile provider; stop them after `durationMs`; let pending namespace and workspace deletions finish (up to the
// bound); then check the history.
import path from "node:path";
import { check, RULE_RESOURCE, WORKSPACE_RESOURCE, type CheckResult } from "./checker.ts";
import { SOAK_PROVIDER } from "./provider.ts";
import { type Consumer, type SoakEnv } from "./env.ts";
import { realBuild, weakBuild } from "./weaken.ts";
import { injectFaults } from "./faults.ts";
import type { History } from "./history.ts";
import { shardConn, type ShardConn } from "./kube.ts";
import { sentinelProbe, setupSentinel, windowProbe } from "./probes.ts";
import { drain } from "./drain.ts";
import { Recorder } from "./recorder.ts";
import { Rng } from "./rng.ts";
import { KINDS, apiPath } from "./kinds.ts";
import { OpLog, sleep, type WorkloadOptions } from "./oplog.ts";
import { deleteWorkspaceLater, ruleChurner } from "./churn.ts";
import { worker } from "./workload.ts";
import { carelessAuthor } from "./careless.ts";
import { PATHS } from "../kcp/topology.ts";
import { startHostile } from "./hostile.ts";
import { CARELESS_PROVIDER } from "./tenants.ts";
import { HOSTILE_PROVIDER, startHostileProvider } from "./hostile-provider.ts";
import { VAULT_PROVIDER, VAULT_SHARD } from "./local-targets.ts";

export interface SoakOptions {
  seed: number;
  durationMs: number;
  workers: number;
  /** The consistency window the checker allows (docs/soak.md). */
  windowMs: number;
  /** I3's bound for deletions to complete and protection to return. */
  boundMs: number;
  faultEveryMs: [number, number];
  ruleChurnEveryMs: [number, number];
  faults: boolean;
  /** The careless author: a faulty rule (an unreadable path, no dependents anywhere) added and removed at random. */
  careless: boolean;
  carelessEveryMs: [number, number];
  /** The hostile consumer: oversized and overloading dependents in its own workspace, slow uploads to the replicas. */
  hostile: boolean;
  hostileEveryMs: [number, number];
  /** How long each hostile episode holds its objects or its trickling connections. */
  hostileHoldMs: [number, number];
  /** Delete the last consumer workspace part-way through. */
  deleteWorkspace: boolean;
  /** The hostile provider: forges its rule's status and rewrites its endpoint slice (hostile-provider.ts). */
  hostileProvider: boolean;
  /** Whether the dep-ctrl export keeps its maximal permission policy (false: a tenant's forged status lands). */
  statusPolicy: boolean;
  /** The weakened build: the webhook address allows every review but every third, which it refuses with 503. */
  weakened: boolean;
  /** The weakened build that reads rules' status back (status-reader.ts), the maximal permission policy off. */
  weakenedStatus: boolean;
  /** The webhook's lookup mode (recorded in the history; the environment was started with it). */
  lookup: "index" | "live";
  log: (line: string) => void;
}

export interface SoakRun {
  history: History;
  result: CheckResult;
}

export async function runSoak(env: SoakEnv, o: SoakOptions): Promise<SoakRun> {
  const rng = new Rng(o.seed);
  const history = emptyHistory(env, o);
  const exitsBefore = env.exits.length;
  const shards: Record<string, ShardConn> = {
    root: shardConn(path.join(env.kcp.rootDir, ".kcp-0/admin.kubeconfig"), "shard-base"),
    "shard-1": shardConn(path.join(env.kcp.rootDir, ".kcp-1/admin.kubeconfig"), "shard-base"),
  };
  const front = shardConn(path.join(env.kcp.rootDir, ".kcp/admin.kubeconfig"), "base");
  const connectionsBefore = env.provider.listener.count;

  o.log("recording kcp's history: a watch per collection on the shard that holds it, with the shard admin");
  const recorder = new Recorder(history);
  const stop = new AbortController();
  const probeStop = new AbortController();
  let progress: NodeJS.Timeout | undefined;
  try {
    const consumers = await recordAll(recorder, env, shards);
    const log = new OpLog();
    history.ops = log.ops;
    const retired = new Set<string>();
    const wl = (r: Rng): WorkloadOptions => ({
      conn: front,
      consumers,
      vars: env.topo.vars,
      log,
      rng: r,
      signal: stop.signal,
      retired,
    });
    const { probes, tasks } = await startLoad(env, o, { history, consumers, rng, wl, signal: stop.signal, probeStop });
    progress = setInterval(() => {
      o.log(
        `${Math.round((Date.now() - history.startedAt) / 1000)} s: ${log.ops.length} operations, ${history.faults.length} faults, ${history.watches.length} watch events`,
      );
    }, 30_000);
    await sleep(o.durationMs);
    stop.abort();
    await Promise.all(tasks);
    clearInterval(progress);
    for (const p of retired) env.deletedWorkspaces.add(p);
    await realBuild(env, o);
    await drain(history, o);
    probeStop.abort();
    await Promise.all(probes);
    await sleep(2000); // the last watch events
  } finally {
    // Also on a failure: no loop may outlive the run (the test process would never end).
    stop.abort();
    probeStop.abort();
    clearInterval(progress);
    await recorder.stop();
    await realBuild(env, o);
    for (const conn of [...Object.values(shards), front]) conn.agent.destroy();
  }
  history.endedAt = Date.now();
  history.tenantConnections = env.provider.listener.count - connectionsBefore;
  history.exits = env.exits.slice(exitsBefore);
  return { history, result: check(history) };
}

function emptyHistory(env: SoakEnv, o: SoakOptions): History {
  return {
    seed: o.seed,
    startedAt: Date.now(),
    endedAt: 0,
    windowMs: o.windowMs,
    boundMs: o.boundMs,
    mode: `${o.lookup} lookup`,
    weakened: o.weakened,
    statusReadBack: o.weakenedStatus,
    statusPolicyOff: o.weakenedStatus || !o.statusPolicy,
    workspaces: { ...env.workspaces },
    localTargets: env.localTargets,
    watches: [],
    ops: [],
    faults: [],
    exits: env.exits,
    window: [],
    gaps: [],
    hostile: [],
  };
}

/** Watches, with each shard's admin: the workspaces, the providers' rules, and every consumer's objects. */
async function recordAll(recorder: Recorder, env: SoakEnv, shards: Record<string, ShardConn>): Promise<Consumer[]> {
  const rootShard = shards["root"] as ShardConn;
  await recorder.watch({
    shard: "root",
    conn: rootShard,
    cluster: "root",
    path: "/apis/tenancy.kcp.io/v1alpha1/workspaces",
    resource: WORKSPACE_RESOURCE,
  });
  const onRoot = [PATHS.compute, SOAK_PROVIDER, CARELESS_PROVIDER, HOSTILE_PROVIDER].map((p) => ({ p, shard: "root" }));
  for (const { p, shard } of [...onRoot, { p: VAULT_PROVIDER, shard: VAULT_SHARD }]) {
    await recorder.watch({
      shard,
      conn: shards[shard] as ShardConn,
      cluster: clusterOf(env, p),
      path: "/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules",
      resource: RULE_RESOURCE,
    });
  }
  const consumers = env.liveConsumers();
  for (const c of [...consumers, env.hostile]) {
    const conn = shards[c.shard] as ShardConn;
    await recorder.watch({
      shard: c.shard,
      conn,
      cluster: c.cluster,
      path: "/api/v1/namespaces",
      resource: "namespaces",
    });
    for (const k of Object.values(KINDS)) {
      await recorder.watch({
        shard: c.shard,
        conn,
        cluster: c.cluster,
        path: `${apiPath(k)}/${k.plural}`,
        resource: k.resource,
      });
    }
  }
  return consumers;
}

interface Load {
  history: History;
  consumers: Consumer[];
  rng: Rng;
  wl: (r: Rng) => WorkloadOptions;
  signal: AbortSignal;
  probeStop: AbortController;
}

/**
 * The sentinels, the probes, the workers, the rule churn, the workspace deletion and the faults, started in this
 * order: each draws its own fork of the seeded generator, so the order is what makes a seed replay the same run.
 */
async function startLoad(
  env: SoakEnv,
  o: SoakOptions,
  { history, consumers, rng, wl, signal, probeStop }: Load,
): Promise<{ probes: Promise<void>[]; tasks: Promise<void>[] }> {
  const sentinel = consumers.find((c) => c.path === PATHS.consumer1);
  const windowAt = consumers.find((c) => c.path === PATHS.consumer2);
  if (!sentinel || !windowAt) throw new Error("consumer1 and consumer2 are missing from the soak topology");
  await setupSentinel(wl(rng.fork()), sentinel);
  await setupSentinel(wl(rng.fork()), windowAt);
  await weakBuild(env, o, history);
  const probes = [
    sentinelProbe(wl(rng.fork()), sentinel, 2000, probeStop.signal),
    windowProbe(wl(rng.fork()), windowAt, 10_000, history.window),
  ];
  const tasks: Promise<void>[] = [];
  for (let i = 0; i < o.workers; i++) tasks.push(worker(`w${i}`, wl(rng.fork())));
  tasks.push(ruleChurner(wl(rng.fork()), o.ruleChurnEveryMs));
  const doomed = consumers.at(-1);
  if (o.deleteWorkspace && doomed && consumers.length > 3) {
    tasks.push(deleteWorkspaceLater(wl(rng.fork()), doomed, Math.floor(o.durationMs / 2)));
  }
  if (o.faults && !o.weakened && !o.weakenedStatus)
    tasks.push(injectFaults(env, rng.fork(), o.faultEveryMs, signal, history.faults, o.log));
  // Forked last, so a seed's workers, churn and faults draw what they drew before the careless author existed.
  if (o.careless) tasks.push(carelessAuthor(wl(rng.fork()), o.carelessEveryMs, history.faults, o.log));
  if (o.hostile) tasks.push(...startHostile(env, o, history, wl(rng.fork()), signal));
  if (o.hostileProvider) tasks.push(startHostileProvider(env.provider, o, history, wl(rng.fork())));
  return { probes, tasks };
}

function clusterOf(env: SoakEnv, p: string): string {
  const found = Object.entries(env.workspaces).find(([, v]) => v === p);
  if (!found) throw new Error(`no logical cluster known for ${p}`);
  return found[0];
}
