import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { DependencyRule } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { RuleSource, type RuleWatch } from "../../src/webhook/rules/source.ts";
import { FakeClock } from "../support/fake-clock.ts";

class FakeWatch implements RuleWatch {
  synced = false;
  rules: DependencyRule[] = [];
  onChange: () => void = () => undefined;
  start(): void {}
  stop(): void {}
  hasSynced(): boolean {
    return this.synced;
  }
  list(): DependencyRule[] {
    return this.rules;
  }
}

const rule = (cluster: string, name: string, path = "root:network") =>
  ({
    metadata: { name, annotations: { "kcp.io/cluster": cluster } },
    spec: {
      dependent: { apiExportName: "c", group: "compute.io", version: "v1", kind: "VM", resource: "vms" },
      dependencies: [
        {
          apiExportRef: { path, name: "n" },
          group: "net.io",
          version: "v1",
          resource: "vpcs",
          fieldRef: { path: ".spec.vpc" },
        },
      ],
    },
  }) as unknown as DependencyRule;

const VPCS = { group: "net.io", resource: "vpcs" };

function setup(resolve: (path: string) => Promise<Resolution>) {
  const watch = new FakeWatch();
  const clock = new FakeClock();
  const source = new RuleSource({
    watch: (onChange) => {
      watch.onChange = onChange;
      return watch;
    },
    resolver: { resolve },
    logger: silentLogger(),
    retryMs: 20,
    clock,
  });
  source.start();
  /** Runs what is due now: the rebuild an event asked for, and the one a change during it asked for. */
  const settled = async (): Promise<void> => {
    await clock.advance(0);
    await clock.advance(0);
  };
  return { watch, source, clock, settled };
}

const net1: Resolution = { ok: true, cluster: logicalClusterName("net1") };

describe("RuleSource", () => {
  it("is not ready until the watch synced and a registry was built from the full list", async () => {
    const { watch, source, settled } = setup(() => Promise.resolve(net1));
    assert.equal(source.current(), undefined);
    assert.match(source.notReadyReason() ?? "", /not yet synced/);
    watch.onChange(); // a change before sync builds, but does not make it ready (and polls for the sync)
    await settled();
    assert.equal(source.current(), undefined);

    watch.rules = [rule("c1", "r1")];
    watch.synced = true;
    watch.onChange();
    await settled();
    assert.equal(source.notReadyReason(), undefined);
    assert.deepEqual(
      source
        .current()
        ?.find(logicalClusterName("net1"), VPCS)
        .entries.map((e) => e.rule),
      ["c1/r1"],
    );
    source.stop();
  });

  it("notices a sync no event announced, by looking again every syncPollMs (250 ms)", async () => {
    const { watch, source, clock, settled } = setup(() => Promise.resolve(net1));
    await settled();
    watch.synced = true; // e.g. an export with no endpoints yet: synced, but no change is reported
    await clock.advance(249);
    assert.equal(source.current(), undefined);
    await clock.advance(1);
    assert.notEqual(source.current(), undefined);
    source.stop();
  });

  it("a new endpoint that has not listed stays ready and refuses only the reviews whose rules may come from it", async () => {
    const { watch, source, settled } = setup(() => Promise.resolve(net1));
    const OLD = "https://shard-0/vw";
    const NEW = "https://shard-1/vw";
    let states = [{ endpoint: OLD, synced: true }];
    watch.rules = [rule("c1", "r1")];
    const sourced = () => watch.rules.map((object) => ({ endpoint: OLD, object }));
    Object.assign(watch, { listWithEndpoints: sourced, endpointStates: () => states });
    watch.synced = true;
    watch.onChange();
    await settled();
    assert.equal(source.current()?.find(logicalClusterName("net1"), VPCS).unseen, undefined);

    states = [...states, { endpoint: NEW, synced: false }]; // a new shard that never lists
    watch.synced = false;
    watch.onChange();
    await settled();
    assert.equal(source.notReadyReason(), undefined, "the replica stays ready");
    const known = source.current()?.find(logicalClusterName("net1"), VPCS);
    assert.deepEqual(
      known?.entries.map((e) => e.rule),
      ["c1/r1"],
    );
    assert.equal(known?.unseen, undefined, "a rule listed from a healthy endpoint is decided as usual");
    const unknown = source.current()?.find(logicalClusterName("other"), VPCS);
    assert.deepEqual(unknown?.unseen?.endpoints, [NEW], "no known rule: it may be on the new shard");

    states = states.map((e) => ({ ...e, synced: true }));
    watch.synced = true;
    watch.onChange();
    await settled();
    assert.equal(source.current()?.find(logicalClusterName("other"), VPCS).unseen, undefined);
    source.stop();
  });

  it("before the first full sync, a new endpoint still holds readiness", async () => {
    const { watch, source, settled } = setup(() => Promise.resolve(net1));
    watch.synced = false;
    watch.onChange();
    await settled();
    assert.equal(source.current(), undefined);
    assert.match(source.notReadyReason() ?? "", /not yet synced/);
    source.stop();
  });

  it("a sync that happened during a rebuild does not count until the next build", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const { watch, source, settled } = setup(async () => {
      await gate;
      return net1;
    });
    watch.rules = [rule("c1", "r1")];
    watch.synced = true;
    watch.onChange(); // build 1 starts, waits on the resolver
    watch.synced = false;
    watch.onChange(); // an endpoint was added during build 1
    watch.synced = true;
    release();
    await settled(); // build 1 completes (not complete: epoch moved), build 2 runs
    assert.notEqual(source.current(), undefined);
    source.stop();
  });

  it("rules are updated level-triggered: removed rules disappear", async () => {
    const { watch, source, settled } = setup(() => Promise.resolve(net1));
    watch.synced = true;
    watch.rules = [rule("c1", "a"), rule("c1", "b")];
    watch.onChange();
    await settled();
    assert.equal(source.current()?.ruleCount, 2);
    watch.rules = [rule("c1", "b")];
    watch.onChange();
    await settled();
    assert.deepEqual(
      source
        .current()
        ?.find(logicalClusterName("net1"), VPCS)
        .entries.map((e) => e.rule),
      ["c1/b"],
    );
    source.stop();
  });

  it("retries unresolved paths after retryMs; meanwhile the rule is not enforced and nobody is refused for it", async () => {
    let attempts = 0;
    const { watch, source, clock, settled } = setup((path) => {
      attempts++;
      if (attempts < 3) return Promise.reject(new Error(`cannot reach kcp for ${path}`));
      return Promise.resolve(net1);
    });
    watch.synced = true;
    watch.rules = [rule("c1", "r1")];
    watch.onChange();
    await settled();
    const before = source.current();
    assert.deepEqual(before?.find(undefined, VPCS).entries, []);
    assert.deepEqual(
      before?.problems.map((p) => p.message),
      ["not enforced: spec.dependencies[0] has never resolved: cannot reach kcp for root:network"],
    );
    await clock.advance(19);
    assert.equal(attempts, 1, "no retry before retryMs");
    await clock.advance(1);
    assert.equal(attempts, 2);
    await clock.advance(20);
    assert.equal(attempts, 3);
    const match = source.current()?.find(logicalClusterName("net1"), VPCS);
    assert.equal(match?.entries.length, 1);
    assert.deepEqual(source.current()?.problems, []);
    source.stop();
  });
});
