// The multi-shard harness: a workspace pinned to each shard, created and reached through the front-proxy, each
// shard's system:admin reachable directly, and nothing of the sharded setup left running afterwards.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { createWorkspace } from "../../tools/kcp/api.ts";
import { startShardedKcp } from "../../tools/kcp/sharded.ts";

const LC = "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

/** Command lines of live processes that mention `needle` (shards, front-proxy and cache server name their dirs). */
function processesMentioning(needle: string): string[] {
  const out = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
  return out.split("\n").filter((l) => l.includes(needle) && !l.startsWith("ps "));
}

test("creates a workspace on each shard through the front-proxy, reaches both, and cleans up", async () => {
  const kcp = await startShardedKcp();
  try {
    const procs = processesMentioning(kcp.rootDir).join("\n");
    for (const name of ["kcp start", "kcp-front-proxy", "cache-server"]) assert.match(procs, new RegExp(name));

    const clusters: Record<string, string> = {};
    for (const shard of kcp.shardNames) {
      const wsPath = `root:on-${shard}`;
      const cluster = await createWorkspace(kcp.admin, wsPath, { shard });
      clusters[shard] = cluster;
      // Reach it through the front-proxy by path and by logical cluster name.
      const lc = await kcp.ws(wsPath).get<{ metadata: { annotations?: Record<string, string> } }>(LC);
      assert.equal(lc.metadata.annotations?.["kcp.io/cluster"], cluster);
      await kcp.ws(cluster).get(LC);
    }
    const [rootShard, shard1] = kcp.shardAdmins;
    assert.ok(rootShard && shard1 && clusters["root"] && clusters["shard-1"]);
    assert.notEqual(clusters["root"], clusters["shard-1"]);
    // The workspace pinned to shard-1 lives there: shard-1's own API server serves it, the root shard does not.
    await shard1.forCluster(clusters["shard-1"]).get(LC);
    await rootShard.forCluster(clusters["root"]).get(LC);
    await assert.rejects(rootShard.forCluster(clusters["shard-1"]).get(LC));
  } finally {
    await kcp.stop();
  }
  assert.deepEqual(processesMentioning(kcp.rootDir), [], "no shard, front-proxy or cache-server left");
  assert.equal(existsSync(kcp.rootDir), false, "work dir removed");
});
