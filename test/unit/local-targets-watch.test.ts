// The local-target watches (src/controller/local-targets-watch.ts): which export endpoints are watched after a pass,
// counted through the controller's real sync against consumers played by bench/local-targets-kcp.ts (bounded by
// exports × shards, never consumers; started and stopped as rules, shards and reads change), and the watches as the
// project's informers against a played REST client: an event enqueues one pass, a refused watch backs off without
// enqueueing on every retry. Time is a fake clock's; nothing sleeps.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { LocalTargets } from "../../src/controller/local-targets-sync.ts";
import {
  localTargetWatchesOf,
  LocalTargetWatches,
  watchPlan,
  type EndpointWatches,
  type ExportReadout,
  type WatchedResource,
} from "../../src/controller/local-targets-watch.ts";
import { controllerLeadership } from "../../src/controller/leader.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import { ApiError, type RestClient, type WatchEvent } from "../../src/kcp/rest.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { WorkLoop } from "../../src/util/workloop.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { consumersOf, ruleObject } from "../../bench/local-targets.ts";
import { FakeClock } from "../support/fake-clock.ts";

const shardVW = (n: number) => `https://shard-${n}.test/services/apiexport/root-depctrl/dependencies.opendefense.cloud`;
/** A shard's virtual-workspace base, as a pass visits it (local-targets-shards.ts). */
const shardBase = (n: number) => `https://shard-${n}.test`;
const exportAt = (n: number, cluster: string, name: string) =>
  `https://shard-${n}.test/services/apiexport/${cluster}/${name}`;
const rules = (n: number): { parsed: ParsedRule }[] =>
  Array.from({ length: n }, (_, i) => ({ parsed: parseRule(ruleObject(i))! }));
/** A local-target rule on another provider's export. */
const otherExportRule = (): { parsed: ParsedRule } => ({
  parsed: parseRule(
    dependencyRule("vault-refs", [{ local: true, resource: "secrets", field: ".spec.secretRef.name" }], {
      cluster: "root-vault",
      generation: 1,
      dependent: { group: "vault.test.io", resource: "endpoints" },
    }),
  )!,
});

/** Endpoint sets that only remember what they were told: which URLs, and how often the set changed. */
class FakeWatches implements EndpointWatches {
  urls: string[] = [];
  changes = 0;
  stopped = false;
  setEndpoints(urls: readonly string[]): void {
    if ([...urls].sort().join(" ") !== [...this.urls].sort().join(" ")) this.changes++;
    this.urls = [...urls];
  }
  endpoints(): string[] {
    return this.urls;
  }
  stop(): void {
    this.stopped = true;
    this.urls = [];
  }
}

function world(consumers: number, shards = 1) {
  const kcp = consumersOf(consumers, Math.floor(consumers / 5));
  const vaultConsumers = consumersOf(0, 0); // the other export's: none yet
  const opened = {} as Record<WatchedResource, FakeWatches>;
  let shardUrls = Array.from({ length: shards }, (_, i) => shardVW(i));
  const watches = new LocalTargetWatches({ open: (resource) => (opened[resource] = new FakeWatches()) });
  let leader = true;
  const local = new LocalTargets({
    endpoints: () => shardUrls,
    clientFor: (endpoint, cluster) => (endpoint.includes("/vault.test.io") ? vaultConsumers : kcp).client(cluster),
    webhookBaseUrl: "https://wh:9443",
    mayWrite: () => leader,
    localTargetWatches: watches,
    logger: silentLogger(),
    metrics: createMetrics(new Registry()),
  });
  const sync = (r: { parsed: ParsedRule }[]) => local.sync({ rules: r, caBundle: "Q0E=" }, () => false);
  const setShards = (n: number): void => void (shardUrls = Array.from({ length: n }, (_, i) => shardVW(i)));
  return { kcp, opened, watches, sync, setShards, lead: (yes: boolean) => void (leader = yes) };
}

describe("local-target watches: which endpoints a pass leaves watched", () => {
  const e = (name: string) => ({ cluster: logicalClusterName("root-vault"), exportName: name });
  const read = (name: string, state: ExportReadout["state"]): ExportReadout => ({ export: e(name), state });

  it("watches bindings where the export is readable or may be, our configurations where it claims them", () => {
    const plan = watchPlan(
      [read("claimed.io", "claimed"), read("unclaimed.io", "unclaimed"), read("gone.io", "gone")],
      [shardBase(0), shardBase(1)],
      new Set(),
    );
    assert.deepEqual(plan.bindings, [
      exportAt(0, "root-vault", "claimed.io"),
      exportAt(1, "root-vault", "claimed.io"),
      exportAt(0, "root-vault", "unclaimed.io"),
      exportAt(1, "root-vault", "unclaimed.io"),
    ]);
    assert.deepEqual(plan.configurations, [
      exportAt(0, "root-vault", "claimed.io"),
      exportAt(1, "root-vault", "claimed.io"),
    ]);
  });

  it("keeps a configurations watch through a read that may pass, and does not start one then", () => {
    const watched = new Set([exportAt(0, "root-vault", "a.io")]);
    const plan = watchPlan([read("a.io", "failed"), read("b.io", "failed")], [shardBase(0)], watched);
    assert.deepEqual(plan.bindings, [exportAt(0, "root-vault", "a.io"), exportAt(0, "root-vault", "b.io")]);
    assert.deepEqual(plan.configurations, [exportAt(0, "root-vault", "a.io")]);
  });
});

describe("local-target watches through the controller's sync (consumers played without kcp)", () => {
  it("opens two watches per export and shard whatever the number of consumers", async () => {
    for (const consumers of [10, 2_000]) {
      const { watches, sync } = world(consumers, 3);
      await sync(rules(4));
      assert.equal(watches.count(), 2 * 3, `${consumers} consumers, 1 export × 3 shards: bindings and configurations`);
    }
  });

  it("follows the rules and the shards, and leaves a steady state alone", async () => {
    const { opened, watches, sync, setShards } = world(10);
    await sync([]);
    assert.equal(watches.count(), 0, "no local-target rule, no watch");
    await sync([...rules(2), otherExportRule()]);
    assert.equal(
      watches.count(),
      3,
      "the first export's bindings and configurations; the second's bindings (no binding shows its claim yet)",
    );
    assert.ok(opened.bindings.urls.some((u) => u.includes("/root-vault/vault.test.io")));
    const changes = opened.bindings.changes + opened.configurations.changes;
    await sync([...rules(2), otherExportRule()]);
    assert.equal(opened.bindings.changes + opened.configurations.changes, changes, "steady state: no watch restarted");
    setShards(2);
    await sync([...rules(2), otherExportRule()]);
    assert.equal(watches.count(), 6, "a second shard");
    await sync([otherExportRule()]);
    assert.deepEqual(
      opened.bindings.urls,
      [exportAt(0, "root-vault", "vault.test.io"), exportAt(1, "root-vault", "vault.test.io")],
      "the export whose rules went is pruned through the record, not watched",
    );
    assert.deepEqual(opened.configurations.urls, []);
  });

  it("stops watching an export whose virtual workspace refuses (export or grant gone); a later read starts it again", async () => {
    const { kcp, watches, sync } = world(10);
    await sync(rules(1));
    assert.equal(watches.count(), 2);
    kcp.gone = true;
    await sync(rules(1));
    assert.equal(watches.count(), 0, "the resync reads it; no watch retries a 403 meanwhile");
    kcp.gone = false;
    await sync(rules(1));
    assert.equal(watches.count(), 2);
  });

  it("a pass that lost the lease on its way leaves no watch open (the standby runs no further pass)", async () => {
    const { watches, sync, lead } = world(10);
    await sync(rules(1));
    assert.equal(watches.count(), 2);
    lead(false);
    await sync(rules(1));
    assert.equal(watches.count(), 0);
    lead(true);
    await sync(rules(1));
    assert.equal(watches.count(), 2, "leading again: the pass opens them");
  });

  it("stops every watch on stop", async () => {
    const { opened, watches, sync } = world(10);
    await sync(rules(1));
    watches.stop();
    assert.ok(opened.bindings.stopped && opened.configurations.stopped);
    assert.equal(watches.count(), 0);
  });
});

/**
 * The export's virtual workspace as the informers' REST client sees it: each list answers at once (or is refused
 * with `refuse`), each watch stays open until aborted, and the test sends events to the open ones.
 */
function playedClient(refuse?: number) {
  const open: { base: string; path: string; send: (ev: WatchEvent<unknown>) => void }[] = [];
  const counts = { lists: 0, watches: 0 };
  const client = (base: string): RestClient =>
    ({
      withBase: (url: string) => client(url),
      listPages: async (_path: string, onPage: (page: { items: unknown[]; metadata: object }) => void) => {
        counts.lists++;
        if (refuse) throw new ApiError("GET", base, refuse, "Forbidden", "refused");
        onPage({ items: [], metadata: { resourceVersion: "1" } });
      },
      watch: (
        path: string,
        _q: unknown,
        onEvent: (ev: WatchEvent<unknown>) => void,
        signal: AbortSignal,
        onOpen?: () => void,
      ) => {
        counts.watches++;
        onOpen?.();
        const entry = { base, path, send: onEvent };
        open.push(entry);
        return new Promise<void>((resolve) =>
          signal.addEventListener("abort", () => {
            open.splice(open.indexOf(entry), 1);
            resolve();
          }),
        );
      },
    }) as unknown as RestClient;
  return { client: client(""), open, counts };
}

const binding = (cluster: string): WatchEvent<unknown> => ({
  type: "ADDED",
  object: { metadata: { name: "vault.test.io", resourceVersion: "2", annotations: { "kcp.io/cluster": cluster } } },
});
const vault: ExportReadout = {
  export: { cluster: logicalClusterName("root-vault"), exportName: "vault.test.io" },
  state: "claimed",
};

describe("local-target watches as informers (a played REST client, a fake clock)", () => {
  it("runs one pass for a burst of binding events, and one for our configuration deleted in a consumer", async () => {
    const clock = new FakeClock();
    let passes = 0;
    const loop = new WorkLoop({ pass: async () => void passes++, logger: silentLogger(), resyncMs: 3_600_000, clock });
    const kcp = playedClient();
    const watches = localTargetWatchesOf({
      client: kcp.client,
      logger: silentLogger(),
      onChange: () => loop.enqueue(),
      clock,
    });
    loop.start();
    await clock.advance(1_000);
    watches.follow([vault], [shardBase(0)]);
    await clock.advance(1_000);
    assert.deepEqual(kcp.open.map((w) => w.path).sort(), [
      "/clusters/*/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
      "/clusters/*/apis/apis.kcp.io/v1alpha2/apibindings",
    ]);
    const settled = passes;
    const bindings = kcp.open.find((w) => w.path.endsWith("/apibindings"))!;
    for (let i = 0; i < 5; i++) bindings.send(binding(`consumer-${i}`));
    await clock.advance(1_000);
    assert.equal(passes, settled + 1, "five new consumers, one pass, long before the resync");
    const configurations = kcp.open.find((w) => w.path.endsWith("/validatingwebhookconfigurations"))!;
    configurations.send({
      type: "DELETED",
      object: { metadata: { name: "dependency-controller-local-x", resourceVersion: "3" } },
    });
    await clock.advance(1_000);
    assert.equal(passes, settled + 2, "a consumer deleted ours: one pass to put it back");
    watches.follow([], [shardBase(0)]);
    assert.equal(kcp.open.length, 0, "no rule any more: both watches closed");
    await loop.stop();
    watches.stop();
  });

  it("closes every open watch when the replica loses the lease; its first pass as leader again opens them", async () => {
    const clock = new FakeClock();
    const kcp = playedClient();
    const watches = localTargetWatchesOf({ client: kcp.client, logger: silentLogger(), onChange: () => {}, clock });
    let passes = 0;
    const loop = {
      start: () => void (passes++, watches.follow([vault], [shardBase(0)])), // the leader's first pass
      stop: () => Promise.resolve(),
    };
    const leadership = controllerLeadership({ loop, verdicts: { forget: () => {} }, localTargets: watches });
    leadership.started();
    await clock.settle();
    assert.equal(kcp.open.length, 2, "leading: bindings and configurations watched");
    leadership.stopped();
    await clock.settle();
    assert.equal(kcp.open.length, 0, "a standby holds no watch open");
    await clock.advance(60_000);
    assert.equal(kcp.open.length, 0, "and opens none by itself");
    leadership.started();
    await clock.settle();
    assert.equal(kcp.open.length, 2, "leading again: its first pass opens them");
    assert.equal(passes, 2);
    watches.stop();
  });

  it("backs off a refused list (403) up to its cap, and enqueues once for the whole run of failures", async () => {
    const clock = new FakeClock();
    let changes = 0;
    const kcp = playedClient(403);
    const watches = localTargetWatchesOf({
      client: kcp.client,
      logger: silentLogger(),
      onChange: () => changes++,
      clock,
    });
    watches.follow([{ ...vault, state: "unclaimed" }], [shardBase(0)]);
    const listsAfterStart = (await clock.settle(), kcp.counts.lists);
    await clock.advance(60_000);
    // 500, 1,000, 2,000, 4,000, 8,000 ms, then every 10 s: 5 + 5 more lists in a minute, not a tight loop.
    assert.ok(kcp.counts.lists - listsAfterStart >= 5, "it keeps trying: the export may come back");
    assert.ok(kcp.counts.lists - listsAfterStart <= 11, `${kcp.counts.lists - listsAfterStart} lists in a minute`);
    assert.equal(changes, 2, "one for the watch set changing, one for the endpoint turning failing");
    watches.stop();
  });
});
