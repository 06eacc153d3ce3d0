// The multi-shard harness: a workspace pinned to each shard, created and reached through the front-proxy, and each
// shard's system:admin reachable directly.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createWorkspace } from "../kcp/api.ts";
import { shardedKcpSuite } from "../kcp/sharded.ts";

const env = shardedKcpSuite();

test("creates a workspace on each shard through the front-proxy and reaches both", async () => {
  const { kcp } = env;
  const clusters: Record<string, string> = {};
  for (const shard of kcp.shardNames) {
    const wsPath = `root:on-${shard}`;
    clusters[shard] = await createWorkspace(kcp.admin, wsPath, { shard });
    // Reach it through the front-proxy by path and by logical cluster name.
    const ns = await kcp.ws(wsPath).get<{ metadata: { name: string } }>("/api/v1/namespaces/default");
    assert.equal(ns.metadata.name, "default");
    await kcp.ws(clusters[shard]).get("/api/v1/namespaces/default");
  }
  assert.notEqual(clusters["root"], clusters["shard-1"]);

  // The workspace pinned to shard-1 lives there: shard-1's own API server serves it, the root shard does not.
  const [rootShard, shard1] = kcp.shardAdmins;
  await shard1!.forCluster(clusters["shard-1"]!).get("/api/v1/namespaces/default");
  await rootShard!.forCluster(clusters["root"]!).get("/api/v1/namespaces/default");
  await assert.rejects(rootShard!.forCluster(clusters["shard-1"]!).get("/api/v1/namespaces/default"));
});
