// The soak's kcp: the sharded harness with the product topology (providers on the root shard), the soak's own
// provider with a cluster-scoped type, four consumers over both shards, a hostile consumer, the careless author's
// consent-less provider (tools/soak/tenants.ts), a hostile provider (hostile-provider.ts) and a vault provider whose
// local-target rule protects the consumers' Secrets where they accepted (local-targets.ts), two webhook replicas behind a round-robin
// TCP proxy (the one URL the controller writes into every VWC), and the controller, each a process the soak may kill.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, createWorkspace, waitForBinding } from "../kcp/api.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import { startShardedKcp, type ShardedKcp } from "../kcp/sharded.ts";
import { tenant } from "../kcp/tenant.ts";
import {
  OWNER,
  PATHS,
  TOKENS,
  applyDepCtrlApi,
  setupTopology,
  vmRule,
  type Binaries,
  type LookupMode,
  type Topology,
} from "../kcp/topology.ts";
import { AllowAllWebhook } from "./allow-all.ts";
import { HOSTILE_PROVIDER, setupHostileProvider, type HostileProvider } from "./hostile-provider.ts";
import { StatusReadingWebhook } from "./status-reader.ts";
import type { LocalTargetConsent, ProcessExit } from "./history.ts";
import { DECLINING, VAULT_PROVIDER, protectLocalTargets, setupVault } from "./local-targets.ts";
import { SOAK_PROVIDER, serverRule, setupSoakProvider, soakBinding } from "./provider.ts";
import type { RoundRobinProxy } from "./proxy.ts";
import { startProcesses, type Supervised } from "./replicas.ts";
import { CARELESS_PROVIDER, setupCarelessProvider, setupHostileConsumer, type Consumer } from "./tenants.ts";

export type { Consumer } from "./tenants.ts";

const PLACEMENT = { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" };
const EXTRA_CONSUMERS = [
  { path: "root:consumer3", shard: "shard-1" },
  { path: "root:consumer4", shard: "root" },
];

const HOSTILE_CONSUMER_LOG = "the hostile consumer's workspace, bound like the others";

export class SoakEnv {
  readonly kcp: ShardedKcp;
  readonly topo: Topology;
  readonly bins: Binaries;
  readonly consumers: Consumer[];
  /** The hostile consumer's workspace: no worker but the hostile one uses it (tools/soak/hostile.ts). */
  readonly hostile: Consumer;
  /** The hostile provider: its tenant's connection, its counting listener, the URLs it forges. */
  readonly provider: HostileProvider;
  readonly proxy: RoundRobinProxy;
  readonly webhooks: Supervised[];
  readonly controller: Supervised;
  readonly exits: ProcessExit[];
  readonly workspaces: Record<string, string>;
  readonly webhookPorts: number[];
  /** Which consumers accepted the vault export's claim (its local-target rule protects their Secrets) and declined. */
  readonly localTargets: LocalTargetConsent[];
  /** Consumer workspaces a run deleted: later runs on this env leave them out. */
  readonly deletedWorkspaces = new Set<string>();
  private allowAll: AllowAllWebhook | undefined;
  private statusReader: StatusReadingWebhook | undefined;

  private constructor(init: {
    kcp: ShardedKcp;
    topo: Topology;
    bins: Binaries;
    consumers: Consumer[];
    hostile: Consumer;
    provider: HostileProvider;
    proxy: RoundRobinProxy;
    webhooks: Supervised[];
    controller: Supervised;
    exits: ProcessExit[];
    workspaces: Record<string, string>;
    webhookPorts: number[];
    localTargets: LocalTargetConsent[];
  }) {
    this.kcp = init.kcp;
    this.topo = init.topo;
    this.bins = init.bins;
    this.consumers = init.consumers;
    this.hostile = init.hostile;
    this.provider = init.provider;
    this.proxy = init.proxy;
    this.webhooks = init.webhooks;
    this.controller = init.controller;
    this.exits = init.exits;
    this.workspaces = init.workspaces;
    this.webhookPorts = init.webhookPorts;
    this.localTargets = init.localTargets;
  }

  /** `lookup`: the webhook's mode, and so its read grant (the providers' consent, or the per-shard grant). */
  static async start(log: (line: string) => void, lookup: LookupMode = "index"): Promise<SoakEnv> {
    log(`starting the sharded kcp (2 shards, front-proxy, cache server); webhook --lookup=${lookup}`);
    const kcp = await startShardedKcp({ tokens: TOKENS });
    let processes: Awaited<ReturnType<typeof startProcesses>> | undefined;
    try {
      const topo = await setupTopology(kcp, { placement: PLACEMENT, log, lookup });
      const workspaces: Record<string, string> = { root: "root" };
      for (const [k, p] of Object.entries(PATHS)) workspaces[topo.clusters[k as keyof typeof PATHS]] = p;
      log(`${SOAK_PROVIDER}: zones (cluster-scoped) and servers, open to all, bound to dep-ctrl, with its own token`);
      const soak = await setupSoakProvider(kcp, lookup);
      workspaces[soak.cluster] = SOAK_PROVIDER;
      const consumers = await setupConsumers(kcp, topo, workspaces, log);
      log(`${HOSTILE_CONSUMER_LOG}; ${CARELESS_PROVIDER}: widgets, bound to dep-ctrl, no index consent`);
      const hostile = await setupHostileConsumer(kcp, topo);
      workspaces[hostile.cluster] = hostile.path;
      workspaces[await setupCarelessProvider(kcp)] = CARELESS_PROVIDER;
      log(`${HOSTILE_PROVIDER}: gadgets, bound to dep-ctrl, index consent and a rule on VPCs, all with its own token`);
      const provider = await setupHostileProvider(kcp);
      workspaces[provider.cluster] = HOSTILE_PROVIDER;
      log(`${VAULT_PROVIDER} (shard-1): endpoints naming Secrets, claim accepted but by ${DECLINING}, own tokens`);
      const vault = await setupVault(kcp, consumers, hostile, lookup);
      workspaces[vault.cluster] = VAULT_PROVIDER;
      processes = await startProcesses(kcp, lookup, log);
      log(
        "rules, each by its provider's own token: the fixtures' VM rule, the soak's server rule, the vault's Secret rule",
      );
      await apply(tenantOf(topo, PATHS.compute), vmRule(topo.vars));
      await apply(soak.provider.client, [serverRule(topo.vars, "full")]);
      await protectLocalTargets(vault, consumers);
      const localTargets = [vault.consent];
      return new SoakEnv({ kcp, topo, consumers, hostile, provider, workspaces, localTargets, ...processes });
    } catch (err) {
      // A setup that fails after the binaries started stops them too, or they keep the test process alive.
      if (processes) {
        await Promise.all([...processes.webhooks, processes.controller].map((p) => p.stop()));
        await processes.proxy.close();
      }
      await kcp.stop();
      throw err;
    }
  }

  liveConsumers(): Consumer[] {
    return this.consumers.filter((c) => !this.deletedWorkspaces.has(c.path));
  }

  /** Points the proxy at the weakened build (allows every review but every third: 503), or back at the replicas. */
  async weaken(on: boolean): Promise<void> {
    if (on) {
      this.allowAll ??= new AllowAllWebhook(this.bins.certs);
      this.proxy.backends = [await this.allowAll.listen()];
    } else {
      this.proxy.backends = this.webhookPorts;
      await this.allowAll?.close();
      this.allowAll = undefined;
    }
    this.proxy.dropConnections();
  }

  /**
   * The dep-ctrl export with or without its maximal permission policy. Without it a tenant's forged rule status lands
   * (kcp.md §9); the soak turns it off only for --no-status-policy and --weakened-status, and back on after.
   */
  async statusPolicy(on: boolean): Promise<void> {
    await applyDepCtrlApi(this.kcp, on);
  }

  /**
   * Points the proxy at the weakened build that reads rules' status back (tools/soak/status-reader.ts: a test double
   * in front of the real replicas, trusting the rules as `rules` shows them), or back at the replicas.
   */
  async readStatusBack(rules: (() => readonly Record<string, unknown>[]) | undefined): Promise<void> {
    await this.statusReader?.close();
    this.statusReader = undefined;
    if (rules) {
      this.statusReader = new StatusReadingWebhook(this.bins.certs, this.webhookPorts, rules);
      this.proxy.backends = [await this.statusReader.listen()];
    } else this.proxy.backends = this.webhookPorts;
    this.proxy.dropConnections();
  }

  logTails(lines = 30): string {
    return [...this.webhooks, this.controller]
      .map((s) => `--- ${s.name} ---\n${s.current?.proc.logTail(lines) ?? "(not started)"}`)
      .join("\n");
  }

  async stop(): Promise<void> {
    await Promise.all([...this.webhooks, this.controller].map((s) => s.stop()));
    await this.allowAll?.close();
    await this.statusReader?.close();
    await this.provider.listener.close();
    this.provider.conn.agent.destroy();
    await this.proxy.close();
    await this.kcp.stop();
  }
}

/**
 * The topology's two consumers and two more over both shards, each bound to the three provider APIs. The platform
 * (kcp-admin) creates the extra workspaces; each consumer binds with its own token (the topology's for its two).
 */
async function setupConsumers(
  kcp: ShardedKcp,
  topo: Topology,
  workspaces: Record<string, string>,
  log: (line: string) => void,
): Promise<Consumer[]> {
  const consumers: Consumer[] = [
    { path: PATHS.consumer1, cluster: topo.clusters.consumer1, shard: "root" },
    { path: PATHS.consumer2, cluster: topo.clusters.consumer2, shard: "shard-1" },
  ];
  const clients = new Map<string, RestClient>(consumers.map((c) => [c.path, tenantOf(topo, c.path)]));
  for (const extra of EXTRA_CONSUMERS) {
    const cluster = await createWorkspace(kcp.admin, extra.path, { shard: extra.shard });
    workspaces[cluster] = extra.path;
    consumers.push({ path: extra.path, cluster, shard: extra.shard });
    const client = (await tenant(kcp, extra.path, { name: OWNER })).client;
    clients.set(extra.path, client);
    await apply(client, readFileSync(path.join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8"), topo.vars);
  }
  log("consumers: bind soak.test.io too");
  for (const c of consumers) {
    const client = clients.get(c.path) as RestClient;
    await apply(client, [soakBinding()]);
    for (const b of ["network.test.io", "compute.test.io", "soak.test.io"]) await waitForBinding(client, b);
  }
  return consumers;
}

/** The topology's tenant of `workspacePath` (its owner's token): the one that acts there, never kcp-admin. */
function tenantOf(topo: Topology, workspacePath: string): RestClient {
  const t = topo.tenants[workspacePath];
  if (!t) throw new Error(`the topology made no tenant for ${workspacePath}`);
  return t.client;
}
