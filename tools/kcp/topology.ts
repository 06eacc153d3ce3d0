// The product's topology on a running kcp, set up the way the getting-started guide tells a user to: the dep-ctrl
// workspace with the generated manifests and bootstrap RBAC, a network and a compute provider that bind the dep-ctrl
// export, consumers that bind both providers, and the two binaries as separate processes with their own identities.
// Shared by the end-to-end tests, the demo and the benchmarks.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, createWorkspace, parseYaml, waitForBinding, type KObject } from "./api.ts";
import { makeCerts, type CertFiles } from "./certs.ts";
import { REPO_ROOT, type TokenUser } from "./harness.ts";
import { ManagedProcess, freePort, waitFor } from "./process.ts";

/** What the topology needs of a kcp: a single shard (Kcp) or the sharded setup (ShardedKcp). */
export interface KcpEnv {
  readonly rootDir: string;
  readonly baseUrl: string;
  readonly caPem: string;
  readonly admin: RestClient;
  readonly shardAdmins: RestClient[];
  ws(workspace: string): RestClient;
  kubeconfigFor(token: string, workspace: string, file?: string): string;
}

export const IDENTITIES = {
  controller: { token: "dependency-controller-token", user: "kcp-dependency-controller" },
  webhook: { token: "dependency-webhook-token", user: "kcp-dependency-webhook" },
  /** A second webhook identity with no rights until a test grants them (to hold a webhook in its starting phase). */
  standbyWebhook: { token: "standby-webhook-token", user: "kcp-dependency-webhook-standby" },
} as const satisfies Record<string, TokenUser>;

export const TOKENS: TokenUser[] = Object.values(IDENTITIES);

export type LookupMode = "index" | "live";

export const PATHS = {
  depCtrl: "root:dep-ctrl",
  network: "root:network-provider",
  compute: "root:compute-provider",
  consumer1: "root:consumer1",
  consumer2: "root:consumer2",
} as const;

export const EXPORT_NAME = "dependencies.opendefense.cloud";

const file = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), "utf8");

export const RBAC_VARS = { CONTROLLER_USER: IDENTITIES.controller.user, WEBHOOK_USER: IDENTITIES.webhook.user };

/** The provider-side APIBinding of the dep-ctrl export (claim accepted), pointed at `depCtrlPath`. */
export function depCtrlBinding(depCtrlPath: string): KObject[] {
  const docs = parseYaml(file("deploy/kcp/apibinding-provider.yaml"));
  for (const d of docs) {
    const spec = d["spec"] as { reference: { export: { path: string } } };
    spec.reference.export.path = depCtrlPath;
  }
  return docs;
}

export interface Topology {
  clusters: Record<keyof typeof PATHS, LogicalClusterName>;
  vars: Record<string, string>;
}

export interface TopologyOptions {
  /** Shard for each workspace in a sharded setup (e.g. `{ consumer2: "shard-1" }`); kcp schedules the rest. */
  placement?: Partial<Record<keyof typeof PATHS, string>>;
  log?: (line: string) => void;
  /**
   * The webhook's lookup mode, which decides its read grant: "index" (default) the providers' consent to the
   * dependents index (deploy/rbac/provider-index.yaml in each provider workspace), and nothing on the shards; "live"
   * the per-shard `system:admin` grant of the live lookups (deploy/rbac/system-admin.yaml); "both" applies both, so
   * one kcp can run the webhook in either mode (the benchmark compares them side by side).
   */
  lookup?: LookupMode | "both";
}

/** The providers of the fixtures and the export each one's rules name as their dependent's. */
export const PROVIDER_EXPORTS = [
  { path: PATHS.network, exportName: "network.test.io" },
  { path: PATHS.compute, exportName: "compute.test.io" },
] as const;

/** A provider's consent to the dependents index (deploy/rbac/provider-index.yaml) for one of its exports. */
export async function grantIndex(
  env: KcpEnv,
  providerPath: string,
  exportName: string,
  webhookUser: string = IDENTITIES.webhook.user,
): Promise<void> {
  await apply(env.ws(providerPath), file("deploy/rbac/provider-index.yaml"), {
    WEBHOOK_USER: webhookUser,
    DEPENDENT_EXPORT: exportName,
  });
}

export async function setupTopology(env: KcpEnv, opts: TopologyOptions = {}): Promise<Topology> {
  const log = opts.log ?? ((): void => undefined);
  const vars = {
    DEP_CTRL_PATH: PATHS.depCtrl,
    NETWORK_PROVIDER_PATH: PATHS.network,
    COMPUTE_PROVIDER_PATH: PATHS.compute,
  };
  log(
    "creating workspaces root:dep-ctrl, root:network-provider, root:compute-provider, root:consumer1, root:consumer2",
  );
  const clusters = {} as Record<keyof typeof PATHS, LogicalClusterName>;
  for (const [key, p] of Object.entries(PATHS) as [keyof typeof PATHS, string][]) {
    const shard = opts.placement?.[key];
    clusters[key] = await createWorkspace(env.admin, p, shard ? { shard } : {});
  }

  log("dep-ctrl: the DependencyRule APIResourceSchema and APIExport (deploy/kcp/), bootstrap RBAC (deploy/rbac/)");
  await apply(env.ws(PATHS.depCtrl), file("deploy/kcp/apiresourceschema.yaml"));
  await apply(env.ws(PATHS.depCtrl), file("deploy/kcp/apiexport.yaml"));
  await apply(env.ws(PATHS.depCtrl), file("deploy/rbac/dep-ctrl-workspace.yaml"), RBAC_VARS);
  await apply(env.ws("root"), file("deploy/rbac/workspace-resolution.yaml"), RBAC_VARS);
  const lookup = opts.lookup ?? "index";
  if (lookup !== "index")
    for (const shardAdmin of env.shardAdmins) {
      await apply(shardAdmin.forCluster("system:admin"), file("deploy/rbac/system-admin.yaml"), RBAC_VARS);
    }

  log("providers: export their APIs and bind the dep-ctrl export, accepting its webhook-configuration claim");
  await apply(env.ws(PATHS.network), file("test/fixtures/network-provider.yaml"));
  await apply(env.ws(PATHS.compute), file("test/fixtures/compute-provider.yaml"));
  for (const p of [PATHS.network, PATHS.compute]) {
    await apply(env.ws(p), depCtrlBinding(PATHS.depCtrl));
    await waitForBinding(env.ws(p), EXPORT_NAME);
  }
  if (lookup !== "live") for (const p of PROVIDER_EXPORTS) await grantIndex(env, p.path, p.exportName);

  log("consumers: bind the network and compute APIs");
  for (const p of [PATHS.consumer1, PATHS.consumer2]) {
    await apply(env.ws(p), file("test/fixtures/consumer-bindings.yaml"), vars);
    await waitForBinding(env.ws(p), "network.test.io");
    await waitForBinding(env.ws(p), "compute.test.io");
  }
  return { clusters, vars };
}

/** The DependencyRule of the fixtures: VMs depend on their VPC and subnet. */
export function vmRule(vars: Record<string, string>): KObject[] {
  return parseYaml(file("test/fixtures/dependencyrule-vm.yaml"), vars);
}

export interface BinaryProcess {
  proc: ManagedProcess;
  healthUrl: string;
}

/**
 * Where the binaries start from: `src` runs the TypeScript entry points as a developer does (Node strips the types at
 * load); `dist` runs the compiled JavaScript the container image ships (`npm run build`, then
 * `node --enable-source-maps dist/cmd/<name>.js`, the Dockerfile's command). Behaviour is the same; memory is not, so
 * the benchmark measures `dist`.
 */
export type BinariesFrom = "src" | "dist";

function entryPoint(from: BinariesFrom, name: "webhook" | "controller"): string[] {
  return from === "dist"
    ? ["--enable-source-maps", path.join(REPO_ROOT, `dist/cmd/${name}.js`)]
    : [path.join(REPO_ROOT, `src/cmd/${name}.ts`)];
}

/** The controller and the webhook as child processes, started from the same entry points a user runs. */
export class Binaries {
  readonly env: KcpEnv;
  readonly certs: CertFiles;
  webhookPort = 0;
  webhook: BinaryProcess | undefined;
  controller: BinaryProcess | undefined;
  /** The webhook's --lookup at its next start; the topology must have granted that mode's reads. */
  lookup: LookupMode;
  readonly from: BinariesFrom;

  constructor(env: KcpEnv, lookup: LookupMode = "index", from: BinariesFrom = "src") {
    this.env = env;
    this.lookup = lookup;
    this.from = from;
    this.certs = makeCerts(path.join(env.rootDir, "webhook-tls"));
  }

  get webhookUrl(): string {
    return `https://127.0.0.1:${this.webhookPort}`;
  }

  async startWebhook(opts: { waitReady?: boolean; identity?: TokenUser } = {}): Promise<BinaryProcess> {
    if (!this.webhookPort) this.webhookPort = await freePort();
    const health = await freePort();
    const token = (opts.identity ?? IDENTITIES.webhook).token;
    const kubeconfig = this.env.kubeconfigFor(token, PATHS.depCtrl, `webhook-${token}.kubeconfig`);
    const proc = new ManagedProcess(
      process.execPath,
      [
        ...entryPoint(this.from, "webhook"),
        `--kubeconfig=${kubeconfig}`,
        "--bind-address=127.0.0.1",
        `--webhook-port=${this.webhookPort}`,
        `--tls-cert-file=${this.certs.cert}`,
        `--tls-key-file=${this.certs.key}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        `--lookup=${this.lookup}`,
      ],
      path.join(this.env.rootDir, "webhook.log"),
    );
    this.webhook = { proc, healthUrl: `http://127.0.0.1:${health}` };
    // Readiness may wait up to 60 s for the index after the rules (src/webhook/deletion/index/readiness.ts).
    if (opts.waitReady !== false) await waitReady("webhook", this.webhook, 120_000);
    return this.webhook;
  }

  async startController(opts: { webhookUrl?: string; caFile?: string } = {}): Promise<BinaryProcess> {
    const health = await freePort();
    const kubeconfig = this.env.kubeconfigFor(IDENTITIES.controller.token, PATHS.depCtrl, "controller.kubeconfig");
    const proc = new ManagedProcess(
      process.execPath,
      [
        ...entryPoint(this.from, "controller"),
        `--kubeconfig=${kubeconfig}`,
        `--webhook-url=${opts.webhookUrl ?? this.webhookUrl}`,
        `--webhook-ca-bundle-file=${opts.caFile ?? this.certs.caCert}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
      ],
      path.join(this.env.rootDir, "controller.log"),
    );
    this.controller = { proc, healthUrl: `http://127.0.0.1:${health}` };
    await waitReady("controller", this.controller);
    return this.controller;
  }

  async stop(): Promise<void> {
    await Promise.all([this.controller?.proc.stop(), this.webhook?.proc.stop()]);
  }

  logTails(lines = 40): string {
    return [
      `--- controller log ---\n${this.controller?.proc.logTail(lines) ?? "(not started)"}`,
      `--- webhook log ---\n${this.webhook?.proc.logTail(lines) ?? "(not started)"}`,
    ].join("\n");
  }
}

export async function waitReady(name: string, p: BinaryProcess, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${name} /readyz`,
    async () => {
      if (!p.proc.running) throw new Error(`${name} exited with code ${p.proc.exitCode}:\n${p.proc.logTail(20)}`);
      const res = await fetch(`${p.healthUrl}/readyz`).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** One series of a binary's /metrics, e.g. `dependency_webhook_index_types{state="ready"}`; undefined if absent. */
export async function scrapeSeries(p: BinaryProcess, series: string): Promise<number | undefined> {
  const res = await fetch(`${p.healthUrl}/metrics`).catch(() => undefined);
  if (!res?.ok) return undefined;
  const line = (await res.text()).split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * Waits until a webhook in index mode has every dependent type it watches ready (none syncing or failing). Readiness
 * does not wait for a failing type (e.g. a grant given after the rules synced), nor past its 60 s grace.
 */
export async function waitIndexed(name: string, p: BinaryProcess, timeoutMs = 60_000): Promise<void> {
  const types = (state: string) => scrapeSeries(p, `dependency_webhook_index_types{state="${state}"}`);
  await waitFor(
    `${name} index ready`,
    async () =>
      (((await types("ready")) ?? 0) > 0 && (await types("syncing")) === 0 && (await types("failing")) === 0) ||
      undefined,
    { timeoutMs, intervalMs: 200 },
  );
}
