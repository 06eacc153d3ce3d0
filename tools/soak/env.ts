// The soak's kcp: the sharded harness with the product topology (providers on the root shard), the soak's own
// provider with a cluster-scoped type, four consumers over both shards, two webhook replicas behind a round-robin
// TCP proxy (the one URL the controller writes into every VWC), and the controller, each a process the soak may kill.
import { readFileSync } from "node:fs";
import path from "node:path";
import { apply, createWorkspace, waitForBinding, type KObject } from "../kcp/api.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import { ManagedProcess, freePort } from "../kcp/process.ts";
import { startShardedKcp, type ShardedKcp } from "../kcp/sharded.ts";
import {
  Binaries,
  EXPORT_NAME,
  IDENTITIES,
  PATHS,
  TOKENS,
  depCtrlBinding,
  setupTopology,
  grantIndex,
  type LookupMode,
  vmRule,
  waitReady,
  type BinaryProcess,
  type Topology,
} from "../kcp/topology.ts";
import { AllowAllWebhook } from "./allow-all.ts";
import type { ProcessExit } from "./history.ts";
import { RoundRobinProxy } from "./proxy.ts";

export const SOAK_PROVIDER = "root:soak-provider";
export const SOAK_RULE = "server-dependencies";

export interface Consumer {
  path: string;
  cluster: string;
  shard: string; // "root" | "shard-1"
}

const PLACEMENT = { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" };
const EXTRA_CONSUMERS = [
  { path: "root:consumer3", shard: "shard-1" },
  { path: "root:consumer4", shard: "root" },
];

/** A restartable process with its exits recorded; `expectExit` marks the next exit as one we caused. */
export class Supervised {
  readonly name: string;
  private readonly startFn: () => Promise<BinaryProcess>;
  current: BinaryProcess | undefined;
  private expected = false;
  private readonly exits: ProcessExit[];

  constructor(name: string, exits: ProcessExit[], start: () => Promise<BinaryProcess>) {
    this.name = name;
    this.exits = exits;
    this.startFn = start;
  }

  async start(): Promise<void> {
    this.expected = false;
    const p = await this.startFn();
    this.current = p;
    void p.proc.wait().then((code) => {
      this.exits.push({ process: this.name, at: Date.now(), code, expected: this.expected });
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (signal === "SIGKILL" || signal === "SIGTERM") this.expected = true;
    this.current?.proc.killGroup(signal);
  }

  async stop(): Promise<void> {
    this.expected = true;
    await this.current?.proc.stop(5000);
  }
}

export class SoakEnv {
  readonly kcp: ShardedKcp;
  readonly topo: Topology;
  readonly bins: Binaries;
  readonly consumers: Consumer[];
  readonly proxy: RoundRobinProxy;
  readonly webhooks: Supervised[];
  readonly controller: Supervised;
  readonly exits: ProcessExit[];
  readonly workspaces: Record<string, string>;
  readonly webhookPorts: number[];
  /** Consumer workspaces a run deleted: later runs on this env leave them out. */
  readonly deletedWorkspaces = new Set<string>();
  private allowAll: AllowAllWebhook | undefined;

  private constructor(init: {
    kcp: ShardedKcp;
    topo: Topology;
    bins: Binaries;
    consumers: Consumer[];
    proxy: RoundRobinProxy;
    webhooks: Supervised[];
    controller: Supervised;
    exits: ProcessExit[];
    workspaces: Record<string, string>;
    webhookPorts: number[];
  }) {
    this.kcp = init.kcp;
    this.topo = init.topo;
    this.bins = init.bins;
    this.consumers = init.consumers;
    this.proxy = init.proxy;
    this.webhooks = init.webhooks;
    this.controller = init.controller;
    this.exits = init.exits;
    this.workspaces = init.workspaces;
    this.webhookPorts = init.webhookPorts;
  }

  /** `lookup`: the webhook's mode, and so its read grant (the providers' consent, or the per-shard grant). */
  static async start(log: (line: string) => void, lookup: LookupMode = "index"): Promise<SoakEnv> {
    log(`starting the sharded kcp (2 shards, front-proxy, cache server); webhook --lookup=${lookup}`);
    const kcp = await startShardedKcp({ tokens: TOKENS });
    try {
      const topo = await setupTopology(kcp, { placement: PLACEMENT, log, lookup });
      const workspaces: Record<string, string> = { root: "root" };
      for (const [k, p] of Object.entries(PATHS)) workspaces[topo.clusters[k as keyof typeof PATHS]] = p;

      log(`${SOAK_PROVIDER}: zones (cluster-scoped) and servers, bound to the dep-ctrl export`);
      const soakCluster = await createWorkspace(kcp.admin, SOAK_PROVIDER, { shard: "root" });
      workspaces[soakCluster] = SOAK_PROVIDER;
      const soak = kcp.ws(SOAK_PROVIDER);
      await apply(soak, readFileSync(path.join(REPO_ROOT, "tools/soak/fixtures/soak-provider.yaml"), "utf8"));
      await apply(soak, depCtrlBinding(PATHS.depCtrl));
      await waitForBinding(soak, EXPORT_NAME);
      if (lookup === "index") await grantIndex(kcp, SOAK_PROVIDER, "soak.test.io");

      const consumers: Consumer[] = [
        { path: PATHS.consumer1, cluster: topo.clusters.consumer1, shard: "root" },
        { path: PATHS.consumer2, cluster: topo.clusters.consumer2, shard: "shard-1" },
      ];
      for (const extra of EXTRA_CONSUMERS) {
        const cluster = await createWorkspace(kcp.admin, extra.path, { shard: extra.shard });
        workspaces[cluster] = extra.path;
        consumers.push({ path: extra.path, cluster, shard: extra.shard });
        await apply(
          kcp.ws(extra.path),
          readFileSync(path.join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8"),
          topo.vars,
        );
      }
      log("consumers: bind soak.test.io too");
      for (const c of consumers) {
        await apply(kcp.ws(c.path), [soakBinding()]);
        for (const b of ["network.test.io", "compute.test.io", "soak.test.io"]) await waitForBinding(kcp.ws(c.path), b);
      }

      const bins = new Binaries(kcp, lookup);
      const exits: ProcessExit[] = [];
      const webhookPorts = [await freePort(), await freePort()];
      const webhooks = webhookPorts.map(
        (port, i) => new Supervised(`webhook-${i}`, exits, () => startWebhookReplica(bins, kcp.rootDir, port, i)),
      );
      const proxy = new RoundRobinProxy(webhookPorts);
      const proxyPort = await proxy.listen();
      log(`two webhook replicas on :${webhookPorts.join(" and :")}, behind the proxy on :${proxyPort}`);
      for (const w of webhooks) await w.start();
      const controller = new Supervised("controller", exits, () =>
        bins.startController({ webhookUrl: `https://127.0.0.1:${proxyPort}` }),
      );
      await controller.start();

      log("rules: the fixtures' VM rule (compute provider) and the soak's server rule (churned)");
      await apply(kcp.ws(PATHS.compute), vmRule(topo.vars));
      await apply(soak, [serverRule(topo.vars, "full")]);
      return new SoakEnv({
        kcp,
        topo,
        bins,
        consumers,
        proxy,
        webhooks,
        controller,
        exits,
        workspaces,
        webhookPorts,
      });
    } catch (err) {
      await kcp.stop();
      throw err;
    }
  }

  liveConsumers(): Consumer[] {
    return this.consumers.filter((c) => !this.deletedWorkspaces.has(c.path));
  }

  /** Points the proxy at a webhook that allows everything (the weakened build), or back at the replicas. */
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

  logTails(lines = 30): string {
    return [...this.webhooks, this.controller]
      .map((s) => `--- ${s.name} ---\n${s.current?.proc.logTail(lines) ?? "(not started)"}`)
      .join("\n");
  }

  async stop(): Promise<void> {
    await Promise.all([...this.webhooks, this.controller].map((s) => s.stop()));
    await this.allowAll?.close();
    await this.proxy.close();
    await this.kcp.stop();
  }
}

function soakBinding(): KObject {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: { name: "soak.test.io" },
    spec: { reference: { export: { path: SOAK_PROVIDER, name: "soak.test.io" } } },
  };
}

/** The churned rule's shapes: with or without the zone, and the subnet path as a list or a single reference. */
export type ServerRuleShape = "full" | "no-zone" | "single-subnet";

export function serverRule(vars: Record<string, string>, shape: ServerRuleShape): KObject {
  const net = { path: vars["NETWORK_PROVIDER_PATH"] ?? PATHS.network, name: "network.test.io" };
  const dependencies: Record<string, unknown>[] = [
    {
      apiExportRef: net,
      group: "network.test.io",
      version: "v1",
      resource: "vpcs",
      fieldRef: { path: ".spec.vpcRef.name" },
    },
    {
      apiExportRef: net,
      group: "network.test.io",
      version: "v1",
      resource: "subnets",
      fieldRef: { path: shape === "single-subnet" ? ".spec.subnetRef.name" : ".spec.nics[*].subnetRef.name" },
    },
  ];
  if (shape !== "no-zone") {
    dependencies.push({
      apiExportRef: { path: SOAK_PROVIDER, name: "soak.test.io" },
      group: "soak.test.io",
      version: "v1",
      resource: "zones",
      fieldRef: { path: ".spec.zoneRef.name" },
    });
  }
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: SOAK_RULE },
    spec: {
      dependent: {
        apiExportName: "soak.test.io",
        group: "soak.test.io",
        version: "v1",
        kind: "Server",
        resource: "servers",
      },
      dependencies,
    },
  };
}

/** One webhook replica from src/cmd/webhook.ts, as Binaries.startWebhook runs it, on a port of its own. */
async function startWebhookReplica(bins: Binaries, rootDir: string, port: number, i: number): Promise<BinaryProcess> {
  const health = await freePort();
  const kubeconfig = bins.env.kubeconfigFor(IDENTITIES.webhook.token, PATHS.depCtrl, "webhook-soak.kubeconfig");
  const proc = new ManagedProcess(
    process.execPath,
    [
      path.join(REPO_ROOT, "src/cmd/webhook.ts"),
      `--kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      `--webhook-port=${port}`,
      `--tls-cert-file=${bins.certs.cert}`,
      `--tls-key-file=${bins.certs.key}`,
      `--health-probe-bind-address=127.0.0.1:${health}`,
      `--lookup=${bins.lookup}`,
    ],
    path.join(rootDir, `webhook-${i}.log`),
  );
  const p = { proc, healthUrl: `http://127.0.0.1:${health}` };
  await waitReady(`webhook-${i}`, p, 120_000); // the index may take up to 60 s after the rules
  return p;
}
