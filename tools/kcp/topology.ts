// The product's topology on a running kcp, set up the way the getting-started guide tells a user to: the dep-ctrl
// workspace with the generated manifests and bootstrap RBAC, a network and a compute provider that bind the dep-ctrl
// export, consumers that bind both providers, and the two binaries as separate processes with their own identities.
// Shared by the end-to-end tests, the demo and the benchmarks.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { apply, createWorkspace, parseYaml, waitForBinding, type KObject } from "./api.ts";
import { REPO_ROOT } from "./harness.ts";
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
  /**
   * Whether the dep-ctrl export carries its maximal permission policy and the dep-ctrl workspace its ClusterRole
   * (deploy/kcp/maximal-permission-policy.yaml), so that no tenant can write a rule's status. Default true, as
   * getting-started installs it; false sets kcp up as an operator who has not applied the policy yet (a provider
   * can then forge its rules' status, which nothing may trust).
   */
  maximalPermissionPolicy?: boolean;
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
 * The fixtures' workspaces, APIs, bindings and grants. Steps that do not need each other run at once (every e2e file,
 * integration test, bench and soak pays for this setup; each workspace or binding is a few seconds of kcp's own
 * controllers): the five workspaces together; the dep-ctrl API beside the providers' APIs; then the providers' dep-ctrl
 * bindings beside the consumers' bindings of the providers' APIs.
 */
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
  const entries = Object.entries(PATHS) as [keyof typeof PATHS, string][];
  const created = await Promise.all(
    entries.map(async ([key, p]) => {
      const shard = opts.placement?.[key];
      return [key, await createWorkspace(env.admin, p, shard ? { shard } : {})] as const;
    }),
  );
  const clusters = Object.fromEntries(created) as Record<keyof typeof PATHS, LogicalClusterName>;

  const policy = opts.maximalPermissionPolicy ?? true;
  const lookup = opts.lookup ?? "index";
  log(
    `dep-ctrl: the DependencyRule APIResourceSchema and APIExport (deploy/kcp/, ${policy ? "with" : "WITHOUT"} its ` +
      "maximal permission policy), bootstrap RBAC (deploy/rbac/); providers: export their APIs",
  );
  await Promise.all([
    (async (): Promise<void> => {
      await applyDepCtrlApi(env, policy);
      await apply(env.ws(PATHS.depCtrl), file("deploy/rbac/dep-ctrl-workspace.yaml"), RBAC_VARS);
    })(),
    apply(env.ws("root"), file("deploy/rbac/workspace-resolution.yaml"), RBAC_VARS),
    ...(lookup !== "index"
      ? env.shardAdmins.map((a) =>
          apply(a.forCluster("system:admin"), file("deploy/rbac/system-admin.yaml"), RBAC_VARS),
        )
      : []),
    apply(env.ws(PATHS.network), file("test/fixtures/network-provider.yaml")),
    apply(env.ws(PATHS.compute), file("test/fixtures/compute-provider.yaml")),
    ...(lookup !== "live" ? PROVIDER_EXPORTS.map((p) => grantIndex(env, p.path, p.exportName)) : []),
  ]);

  log(
    "providers: bind the dep-ctrl export, accepting its webhook-configuration claim; consumers: bind the network and compute APIs",
  );
  await Promise.all([
    ...[PATHS.network, PATHS.compute].map(async (p) => {
      await apply(env.ws(p), depCtrlBinding(PATHS.depCtrl));
      await waitForBinding(env.ws(p), EXPORT_NAME);
    }),
    ...[PATHS.consumer1, PATHS.consumer2].map(async (p) => {
      await apply(env.ws(p), file("test/fixtures/consumer-bindings.yaml"), vars);
      await Promise.all([waitForBinding(env.ws(p), "network.test.io"), waitForBinding(env.ws(p), "compute.test.io")]);
    }),
  ]);
  return { clusters, vars };
}

/** The DependencyRule of the fixtures: VMs depend on their VPC and subnet. */
export function vmRule(vars: Record<string, string>): KObject[] {
  return parseYaml(file("test/fixtures/dependencyrule-vm.yaml"), vars);
}
