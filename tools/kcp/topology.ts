// The product's topology on a running kcp, set up the way the getting-started guide tells a user to: the dep-ctrl
// workspace with the generated manifests and bootstrap RBAC, a network and a compute provider that bind the dep-ctrl
// export, consumers that bind both providers, and the two binaries as separate processes with their own identities.
// Shared by the end-to-end tests, the demo and the benchmarks.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { apply, createWorkspace, parseYaml, waitForBinding, type KObject } from "./api.ts";
import { REPO_ROOT } from "./harness.ts";
import { bindGrant, consentToIndex, tenant, tenantClient, type Tenant } from "./tenant.ts";
import { EXPORT_NAME, IDENTITIES, PATHS, type KcpEnv, type LookupMode } from "./layout.ts";

// The binaries and the layout have their own files; the tests and tools import them from here too.
export {
  Binaries,
  scrapeCounter,
  scrapeSeries,
  waitIndexed,
  waitReady,
  type BinariesFrom,
  type BinaryProcess,
} from "./binaries.ts";
export { EXPORT_NAME, IDENTITIES, PATHS, TOKENS, type KcpEnv, type LookupMode } from "./layout.ts";

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
  /** The providers' and consumers' own credentials (ServiceAccount `OWNER`), by workspace path. */
  tenants: Record<string, Tenant>;
}

/** The ServiceAccount that plays each fixture workspace's owner (tenant.ts); tests reuse it by this name. */
export const OWNER = "owner";

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
  /**
   * Whether the dep-ctrl export carries its maximal permission policy and the dep-ctrl workspace its ClusterRole
   * (deploy/kcp/maximal-permission-policy.yaml), so that no tenant can write a rule's status. Default true, as
   * getting-started installs it; false sets kcp up as an operator who has not applied the policy yet (a provider
   * can then forge its rules' status, which nothing may trust).
   */
  maximalPermissionPolicy?: boolean;
}

/** The providers of the fixtures, the export each one's rules name as their dependent's, and its API's file. */
export const PROVIDER_EXPORTS = [
  { path: PATHS.network, exportName: "network.test.io", api: "test/fixtures/network-provider.yaml" },
  { path: PATHS.compute, exportName: "compute.test.io", api: "test/fixtures/compute-provider.yaml" },
] as const;

/**
 * A provider's consent to the dependents index for one of its exports, given by the provider itself: its own tenant
 * (the workspace owner's ServiceAccount token) runs tenant.ts `consentToIndex`, the one copy of the consent.
 */
export async function grantIndex(
  env: KcpEnv,
  providerPath: string,
  exportName: string,
  webhookUser: string = IDENTITIES.webhook.user,
): Promise<void> {
  await consentToIndex(await tenantClient(env, providerPath, OWNER), exportName, webhookUser);
}

/**
 * The DependencyRule API in the dep-ctrl workspace (deploy/kcp/): the schema, the export, and, unless `policy` is
 * false, the RBAC of its maximal permission policy. Without the policy the export is applied with the field removed.
 */
export async function applyDepCtrlApi(env: KcpEnv, policy = true): Promise<void> {
  const ws = env.ws(PATHS.depCtrl);
  // The policy's ClusterRole first: an export with the policy and no role leaves binders nothing on DependencyRules.
  if (policy) await apply(ws, file("deploy/kcp/maximal-permission-policy.yaml"));
  await apply(ws, file("deploy/kcp/apiresourceschema.yaml"));
  const apiExport = parseYaml(file("deploy/kcp/apiexport.yaml"));
  if (!policy) for (const e of apiExport) delete (e["spec"] as Record<string, unknown>)["maximalPermissionPolicy"];
  await apply(ws, apiExport);
}

/**
 * The fixtures' workspaces, APIs, bindings and grants, each set up by whoever does it for real. The platform (kcp-admin)
 * creates the five workspaces, installs dep-ctrl (its API, bootstrap RBAC, deploy/rbac/dep-ctrl-bind.yaml so providers
 * may bind its export) and any per-shard grant. Every tenant then acts with its own workspace's ServiceAccount token
 * (tenant.ts): a provider exports its API, lets everyone bind it (bindGrant), consents to the index and binds the
 * dep-ctrl export accepting its claims; a consumer binds both providers' exports. Each step waits only for what it
 * needs (every e2e file, integration test, bench and soak pays for this setup; each workspace or binding is a few
 * seconds of kcp's own controllers): a provider's binding of dep-ctrl waits for the platform's install, a consumer's
 * bindings for the providers' exports and bind grants.
 */
export async function setupTopology(env: KcpEnv, opts: TopologyOptions = {}): Promise<Topology> {
  const log = opts.log ?? ((): void => undefined);
  const vars = {
    DEP_CTRL_PATH: PATHS.depCtrl,
    NETWORK_PROVIDER_PATH: PATHS.network,
    COMPUTE_PROVIDER_PATH: PATHS.compute,
  };
  log(
    "platform: creating workspaces root:dep-ctrl, root:network-provider, root:compute-provider, root:consumer1, " +
      "root:consumer2",
  );
  const entries = Object.entries(PATHS) as [keyof typeof PATHS, string][];
  const created = await Promise.all(
    entries.map(async ([key, p]) => {
      const shard = opts.placement?.[key];
      return [key, await createWorkspace(env.admin, p, shard ? { shard } : {})] as const;
    }),
  );
  const clusters = Object.fromEntries(created) as Record<keyof typeof PATHS, LogicalClusterName>;
  const lookup = opts.lookup ?? "index";
  const policy = opts.maximalPermissionPolicy ?? true;
  log(
    `platform: the DependencyRule API (deploy/kcp/, ${policy ? "with" : "WITHOUT"} its maximal permission policy), ` +
      "bootstrap RBAC and the bind grant (deploy/rbac/); providers, each with its own token: export their APIs, " +
      `${lookup === "live" ? "" : "consent to the index, "}bind the dep-ctrl export accepting its claim; consumers, ` +
      "each with its own token: bind the network and compute APIs",
  );
  const platform = installPlatform(env, policy, lookup);
  const providers = PROVIDER_EXPORTS.map((p) => exportAsProvider(env, p, lookup));
  // Created together and awaited together, so that no rejection goes unhandled while another step still waits.
  const [, bound, consumers] = await Promise.all([
    platform,
    Promise.all(providers.map(async (p) => bindDepCtrl(await p, platform))),
    Promise.all([PATHS.consumer1, PATHS.consumer2].map((p) => bindAsConsumer(env, p, vars, providers))),
  ]);
  const tenants = Object.fromEntries([...bound, ...consumers].map((t) => [t.workspace, t]));
  return { clusters, vars, tenants };
}

/** What the platform's operator applies: dep-ctrl's API, its bootstrap RBAC and bind grant, and the shard grants. */
async function installPlatform(env: KcpEnv, policy: boolean, lookup: LookupMode | "both"): Promise<void> {
  const depCtrl = env.ws(PATHS.depCtrl);
  await Promise.all([
    applyDepCtrlApi(env, policy),
    apply(depCtrl, file("deploy/rbac/dep-ctrl-workspace.yaml"), RBAC_VARS),
    apply(depCtrl, file("deploy/rbac/dep-ctrl-bind.yaml")),
    apply(env.ws("root"), file("deploy/rbac/workspace-resolution.yaml"), RBAC_VARS),
    ...(lookup !== "index"
      ? env.shardAdmins.map((a) =>
          apply(a.forCluster("system:admin"), file("deploy/rbac/system-admin.yaml"), RBAC_VARS),
        )
      : []),
  ]);
}

/** A provider, as its own tenant: its API (test/fixtures/), open to every consumer, and its consent to the index. */
async function exportAsProvider(
  env: KcpEnv,
  p: (typeof PROVIDER_EXPORTS)[number],
  lookup: LookupMode | "both",
): Promise<Tenant> {
  const provider = await tenant(env, p.path, { name: OWNER });
  await Promise.all([
    apply(provider.client, [...parseYaml(file(p.api)), ...bindGrant(p.exportName)]),
    ...(lookup !== "live" ? [consentToIndex(provider.client, p.exportName)] : []),
  ]);
  return provider;
}

/** The provider binds the dep-ctrl export, accepting its claims, once the platform has installed it. */
async function bindDepCtrl(provider: Tenant, platform: Promise<void>): Promise<Tenant> {
  await platform;
  await apply(provider.client, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider.client, EXPORT_NAME);
  return provider;
}

/** A consumer, as its own tenant: binds both providers' exports once they exist and may be bound. */
async function bindAsConsumer(
  env: KcpEnv,
  consumerPath: string,
  vars: Record<string, string>,
  providers: Promise<Tenant>[],
): Promise<Tenant> {
  const consumer = await tenant(env, consumerPath, { name: OWNER });
  await Promise.all(providers);
  await apply(consumer.client, file("test/fixtures/consumer-bindings.yaml"), vars);
  await Promise.all(["network.test.io", "compute.test.io"].map((b) => waitForBinding(consumer.client, b)));
  return consumer;
}

/** The DependencyRule of the fixtures: VMs depend on their VPC and subnet. */
export function vmRule(vars: Record<string, string>): KObject[] {
  return parseYaml(file("test/fixtures/dependencyrule-vm.yaml"), vars);
}
