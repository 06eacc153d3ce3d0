// The soak's own API provider: zones (cluster-scoped) and servers whose rule the run churns, so rule changes and a
// cluster-scoped dependency are exercised beside the fixtures' VPCs and VMs.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { apiBinding, apply, createWorkspace, parseYaml, waitForBinding, type KObject } from "../kcp/api.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import type { ShardedKcp } from "../kcp/sharded.ts";
import { bindGrant, consentToIndex, tenant, type Tenant } from "../kcp/tenant.ts";
import { EXPORT_NAME, OWNER, PATHS, depCtrlBinding, type LookupMode } from "../kcp/topology.ts";

export const SOAK_PROVIDER = "root:soak-provider";
export const SOAK_RULE = "server-dependencies";

/**
 * The platform (kcp-admin) creates the provider's workspace on the root shard; the provider, with its own token, exports
 * its APIs open to every consumer (bindGrant), binds dep-ctrl and, in index mode, consents to the index.
 */
export async function setupSoakProvider(
  kcp: ShardedKcp,
  lookup: LookupMode,
): Promise<{ cluster: LogicalClusterName; provider: Tenant }> {
  const cluster = await createWorkspace(kcp.admin, SOAK_PROVIDER, { shard: "root" });
  const provider = await tenant(kcp, SOAK_PROVIDER, { name: OWNER });
  const api = parseYaml(readFileSync(path.join(REPO_ROOT, "tools/soak/fixtures/soak-provider.yaml"), "utf8"));
  await apply(provider.client, [...api, ...bindGrant("soak.test.io")]);
  await apply(provider.client, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider.client, EXPORT_NAME);
  if (lookup === "index") await consentToIndex(provider.client, "soak.test.io");
  return { cluster, provider };
}

export function soakBinding(): KObject {
  return apiBinding("soak.test.io", SOAK_PROVIDER);
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
