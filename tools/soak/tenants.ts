// The soak's two extra tenants: the hostile consumer (a workspace of its own, binding the network, compute and soak
// exports like the innocent consumers, and used by no other worker) and the careless author's consent-less provider
// (exports widgets, binds the dep-ctrl export, never applies deploy/rbac/provider-index.yaml; nobody binds it).
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { apply, createWorkspace, waitForBinding } from "../kcp/api.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import type { ShardedKcp } from "../kcp/sharded.ts";
import { tenant } from "../kcp/tenant.ts";
import { EXPORT_NAME, OWNER, PATHS, depCtrlBinding, type Topology } from "../kcp/topology.ts";
import { soakBinding } from "./provider.ts";

/** A consumer workspace of the soak: its path, logical cluster and shard. */
export interface Consumer {
  path: string;
  cluster: string;
  shard: string; // "root" | "shard-1"
}

/** On the root shard, beside consumer1 (the sentinel's) and consumer4: their index store is the one it loads. */
export const HOSTILE_CONSUMER = { path: "root:hostile-consumer", shard: "root" };
export const CARELESS_PROVIDER = "root:careless-provider";
export const CARELESS_EXPORT = "careless.test.io";

/**
 * The soak's replicas run index mode with a smaller per-workspace budget than the default 20,000 dependents of a type,
 * so the hostile consumer crosses it in a burst of about a hundred VMs. The innocent consumers hold at most about 20
 * VMs and 18 servers each (the workload's name pools over three namespaces, the sentinel and the window probe's VM),
 * far inside it. The names cap (1,000) and the characters budget stay at their defaults.
 */
export const SOAK_INDEX_BUDGET = { maxObjectsPerWorkspace: 100 };

/** The platform (kcp-admin) creates the hostile consumer's workspace; the consumer binds with its own token. */
export async function setupHostileConsumer(kcp: ShardedKcp, topo: Topology): Promise<Consumer> {
  const cluster = await createWorkspace(kcp.admin, HOSTILE_CONSUMER.path, { shard: HOSTILE_CONSUMER.shard });
  const ws = (await tenant(kcp, HOSTILE_CONSUMER.path, { name: OWNER })).client;
  await apply(ws, readFileSync(path.join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8"), topo.vars);
  await apply(ws, [soakBinding()]);
  for (const b of ["network.test.io", "compute.test.io", "soak.test.io"]) await waitForBinding(ws, b);
  return { path: HOSTILE_CONSUMER.path, cluster, shard: HOSTILE_CONSUMER.shard };
}

/**
 * The consent-less provider: the platform (kcp-admin) creates its workspace; with its own token it exports widgets and
 * binds dep-ctrl (claims accepted), and never consents to the index. Nobody binds its export, so it grants no `bind`.
 */
export async function setupCarelessProvider(kcp: ShardedKcp): Promise<LogicalClusterName> {
  const cluster = await createWorkspace(kcp.admin, CARELESS_PROVIDER, { shard: "root" });
  const ws = (await tenant(kcp, CARELESS_PROVIDER, { name: OWNER })).client;
  await apply(ws, readFileSync(path.join(REPO_ROOT, "tools/soak/fixtures/careless-provider.yaml"), "utf8"));
  await apply(ws, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(ws, EXPORT_NAME);
  return cluster;
}
