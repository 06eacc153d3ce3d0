// Local targets on a shard where no provider binds the dep-ctrl export: kcp v0.30.0 lists a shard in the dep-ctrl
// export's APIExportEndpointSlice only once it is bound there, so a consumer of a dependent export on such a shard was
// never seen (no configuration, not counted). Through the controller's real sync (local-targets-sync.ts) against two
// shards of consumers played by bench/local-targets-kcp.ts: root's Shards (src/kcp/shards.ts) add the shard, the
// consumer there is configured, counted and pruned, each shard is visited once however its URL is written, a steady
// state writes nothing, and without the grant on Shards (403) the pass is as before and the rule's status says what
// it cannot see. Also the Shard list's reading (which URLs count, the last good list, one log line per 403).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { localTargetsVerdict } from "../../src/controller/local-targets.ts";
import { shardsToVisit, type PlatformShards } from "../../src/controller/local-targets-shards.ts";
import { LocalTargets } from "../../src/controller/local-targets-sync.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import { ExportRecordInMemory } from "../../src/kcp/local-targets-record.ts";
import { ApiError, type RestClient } from "../../src/kcp/rest.ts";
import { shardBases, ShardList, SHARDS_PATH } from "../../src/kcp/shards.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { ExportConsumers } from "../../bench/local-targets-kcp.ts";
import { ruleObject } from "../../bench/local-targets.ts";

const c = logicalClusterName;
const DEP_CTRL_VW = "https://shard-0.test/services/apiexport/root-depctrl/dependencies.opendefense.cloud";
const rules = (n: number): { parsed: ParsedRule }[] =>
  Array.from({ length: n }, (_, i) => ({ parsed: parseRule(ruleObject(i))! }));

function consumers(...clusters: LogicalClusterName[]): ExportConsumers {
  const kcp = new ExportConsumers();
  for (const cluster of clusters) kcp.consumers.set(cluster, true);
  return kcp;
}

/**
 * Shard 0 holds providers that bind the dep-ctrl export (its slice lists shard 0 only) and two consumers; shard 1
 * holds one consumer of the same dependent export and no provider. `platform` is what root's Shards answer.
 */
function world(platform: PlatformShards) {
  const shards = [consumers(c("onzero1"), c("onzero2")), consumers(c("onone1"))];
  const calls = { reads: 0, writes: 0 };
  const local = new LocalTargets({
    endpoints: () => [DEP_CTRL_VW],
    platformShards: { read: () => Promise.resolve(platform) },
    clientFor: (endpoint, cluster) => {
      const client = shards[endpoint.startsWith("https://shard-1.test/") ? 1 : 0]!.client(cluster);
      return {
        request: (method, path, opts) => {
          calls[method === "GET" ? "reads" : "writes"]++;
          return client.request(method, path, opts);
        },
      };
    },
    webhookBaseUrl: "https://wh:9443",
    mayWrite: () => true,
    localTargetsRecord: new ExportRecordInMemory(),
    logger: silentLogger(),
    metrics: createMetrics(new Registry()),
  });
  const sync = async (r: { parsed: ParsedRule }[]) => {
    const coverage = await local.sync({ rules: r, caBundle: "Q0E=" }, () => false);
    return localTargetsVerdict("arc.opendefense.cloud", coverage.values().next().value);
  };
  return { shards, calls, sync };
}

const BOTH: PlatformShards = { kind: "listed", bases: ["https://shard-0.test", "https://shard-1.test"] };

describe("local targets on a shard where no provider binds the dep-ctrl export", () => {
  it("configures the consumer there and counts it, from root's Shards", async () => {
    const { shards, sync } = world(BOTH);
    const verdict = await sync(rules(1));
    assert.equal(shards[1]!.count(c("onone1")), 1, "configured on the shard the dep-ctrl slice does not list");
    assert.equal(shards[0]!.count(), 2);
    assert.equal(verdict.reason, "Protected");
    assert.match(verdict.message, /in 3 of 3 consumer workspaces$/);
  });

  it("prunes it there too once the export's last local-target rule goes", async () => {
    const { shards, sync } = world(BOTH);
    await sync(rules(1));
    assert.equal(shards[1]!.count(), 1);
    await sync([]);
    assert.equal(shards[1]!.count(), 0);
    assert.equal(shards[0]!.count(), 0);
  });

  it("writes nothing in a steady state, and reads each shard once (two lists per export and shard)", async () => {
    const { calls, sync } = world(BOTH);
    await sync(rules(2));
    const before = { ...calls };
    await sync(rules(2));
    assert.equal(calls.writes, before.writes, "steady state: no write");
    assert.equal(calls.reads - before.reads, 4, "2 shards × (bindings + configurations)");
  });

  it("with one shard, root's Shard naming the slice's shard (written with a trailing /) adds no visit", async () => {
    const { calls, shards, sync } = world({ kind: "listed", bases: ["https://shard-0.test"] });
    await sync(rules(1));
    const before = { ...calls };
    await sync(rules(1));
    assert.deepEqual([calls.writes - before.writes, calls.reads - before.reads], [0, 2]);
    assert.equal(shards[1]!.count(), 0);
    assert.deepEqual(
      shardsToVisit([DEP_CTRL_VW], { kind: "listed", bases: shardBases([shard("https://shard-0.test/")]) }),
      {
        bases: ["https://shard-0.test"],
      },
    );
  });

  it("without the grant on Shards (403) works as before and says what it cannot see", async () => {
    const { shards, sync } = world({ kind: "forbidden" });
    const verdict = await sync(rules(1));
    assert.equal(shards[1]!.count(), 0, "the consumer on shard 1 is not seen");
    assert.equal(shards[0]!.count(), 2, "shard 0 is protected as before");
    assert.deepEqual([verdict.status, verdict.reason], ["True", "Protected"]);
    assert.equal(
      verdict.message,
      "protecting secrets in 2 of 2 consumer workspaces; consumers on shards where no provider binds the dep-ctrl " +
        "export are not seen: grant the controller list on shards (deploy/rbac/workspace-resolution.yaml in root)",
    );
  });

  it("says so too when the Shards could not be listed yet for another reason", async () => {
    const { sync } = world({ kind: "failed", message: "503 Service Unavailable" });
    assert.match((await sync(rules(1))).message, /not seen: the platform's shards could not be listed \(503/);
  });
});

const shard = (virtualWorkspaceURL?: unknown) => ({ spec: { virtualWorkspaceURL } });

/** Root as the Shard list's client sees it: `answer` per list. */
function rootClient(answer: () => unknown[] | ApiError): { client: RestClient; lists: () => number } {
  let lists = 0;
  const client = {
    listAll: (path: string) => {
      lists++;
      assert.equal(path, SHARDS_PATH);
      const a = answer();
      return a instanceof ApiError ? Promise.reject(a) : Promise.resolve({ metadata: {}, items: a });
    },
  } as unknown as RestClient;
  return { client, lists: () => lists };
}

describe("root's Shards (src/kcp/shards.ts)", () => {
  it("take each shard's https virtual-workspace URL as kcp joins to it, once; anything else is left out", () => {
    assert.deepEqual(
      shardBases([
        shard("https://shard-1.test:6445/"),
        shard("https://SHARD-1.test:6445"),
        shard("https://lb.test/kcp/"),
        shard(),
        shard("http://plain.test"),
        shard("https://user:pw@creds.test"),
        shard("https://q.test/?x=1"),
        shard("not a url"),
        shard(7),
      ]),
      ["https://lb.test/kcp", "https://shard-1.test:6445"],
    );
  });

  it("keep the last good list through a failure, and log a 403 once however often it answers", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: "warn" },
      { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    );
    let answer: unknown[] | ApiError = new ApiError("GET", SHARDS_PATH, 403, "Forbidden", "no");
    const root = rootClient(() => answer);
    const list = new ShardList(root.client, logger);
    assert.deepEqual(await list.read(), { kind: "forbidden" });
    assert.deepEqual(await list.read(), { kind: "forbidden" });
    assert.equal(lines.length, 1, "one line for a run of 403s");
    assert.match(String(lines[0]!["hint"]), /workspace-resolution\.yaml in root/);
    answer = [shard("https://shard-0.test"), shard("https://shard-1.test")];
    const listed = { kind: "listed", bases: ["https://shard-0.test", "https://shard-1.test"] };
    assert.deepEqual(await list.read(), listed);
    answer = new ApiError("GET", SHARDS_PATH, 500, "Internal Server Error", "etcd");
    assert.deepEqual(await list.read(), listed, "a shard once seen is still a shard");
    assert.equal(root.lists(), 4);
  });

  it("answer failed (not forbidden) for another error before any list worked", async () => {
    const list = new ShardList(
      rootClient(() => new ApiError("GET", SHARDS_PATH, 503, "Service Unavailable", "")).client,
      silentLogger(),
    );
    assert.deepEqual(await list.read(), { kind: "failed", message: "503 Service Unavailable" });
  });
});
