// The dependents index as a finder, without kcp: its watches are fakes whose shards the test fills, lists and breaks.
// What it must get right is per shard: a consumer workspace lives on one shard, so that shard answers alone; "no
// dependents" needs every shard listed and healthy; anything else is "unavailable" (a 503), never a wrong "none".
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { dependentTypeKey } from "../../src/api/index-report.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import type { FinderAnswer } from "../../src/webhook/deletion/finder.ts";
import { fp, VM_DEPENDENT, vmLookup } from "./helpers-rules.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

const KEY = dependentTypeKey(VM_DEPENDENT);
const A = "https://shard-a/services/apiexport/compute/compute.example.io";
const B = "https://shard-b/services/apiexport/compute/compute.example.io";
const VM_PATH = "/apis/compute.example.io/v1/namespaces/default/virtualmachines";

/** An index following one rule on VMs at .spec.vpcRef.name, and the fake watches it built. */
function indexed(...paths: string[]) {
  const { factory, built } = fakeWatches();
  let changes = 0;
  const index = new DependentsIndex({
    watch: factory,
    logger: pino({ level: "silent" }),
    onChange: () => changes++,
  });
  index.follow(registryOf(vmType(...(paths.length ? paths : [".spec.vpcRef.name"]))));
  return { index, built, watch: () => built[0]!.watch, changes: () => changes };
}

const names = (a: FinderAnswer): string[] => {
  assert.ok(a.ok, `expected dependents, got ${JSON.stringify(a)}`);
  return a.dependents.map((d) => d.name);
};

function assertUnavailable(a: FinderAnswer, reason: string, message: RegExp): void {
  assert.equal(a.ok, false, `expected unavailable, got ${JSON.stringify(a)}`);
  if (a.ok) return;
  assert.equal(a.reason, reason);
  assert.match(a.message, message);
}

describe("DependentsIndex: answers per shard", () => {
  it("is 'starting' for a type it does not watch, and watches what the registry names", async () => {
    const { index, built } = indexed();
    assert.equal(built.length, 1);
    assert.equal(built[0]!.key, KEY);
    assert.equal(built[0]!.watch.started, true);
    const other = vmLookup({ dependent: { ...VM_DEPENDENT, resource: "disks" } });
    const a = await index.find(other, 10);
    assertUnavailable(a, "starting", /^the dependents index is starting$/);
    assert.ok(!a.ok && a.detail.startsWith(dependentTypeKey(other.dependent)), "the type is named in the log only");
  });

  it("answers from the shard that holds the consumer, whatever the other shard is doing", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer2", "vm-a", "my-vpc")], { synced: false, error: "503 unavailable" });
    watch().endpoint(B, [vmObject("consumer1", "vm-b", "my-vpc"), vmObject("consumer1", "vm-c", "other")]);
    assert.deepEqual(names(await index.find(vmLookup(), 10)), ["vm-b"]);
    // The second look before a denial goes to that shard, for that consumer.
    assert.deepEqual(watch().reads, [`${B} consumer1 ${VM_PATH}/vm-b`]);
  });

  it("finds each consumer's dependents on its own shard, never on the shard listed first", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer2", "vm-a", "my-vpc")]);
    watch().endpoint(B, [vmObject("consumer1", "vm-b", "my-vpc"), vmObject("consumer3", "vm-c", "other")]);
    assert.deepEqual(names(await index.find(vmLookup(), 10)), ["vm-b"]);
    assert.deepEqual(names(await index.find(vmLookup({ consumer: "consumer2" as LogicalClusterName }), 10)), ["vm-a"]);
    assert.deepEqual(await index.find(vmLookup({ consumer: "consumer3" as LogicalClusterName }), 10), {
      ok: true,
      dependents: [],
      complete: true,
    });
  });

  it("says 'no dependents' only when every shard has listed and is healthy", async () => {
    const { index, watch } = indexed();
    const a = watch().endpoint(A, [vmObject("consumer2", "vm-a", "my-vpc")]);
    const b = watch().endpoint(B, [], { synced: false });
    assertUnavailable(await index.find(vmLookup(), 10), "syncing", /^the dependents index is still syncing$/);
    b.synced = true;
    assert.deepEqual(await index.find(vmLookup(), 10), { ok: true, dependents: [], complete: true });
    a.error = "403 Forbidden";
    assertUnavailable(await index.find(vmLookup(), 10), "failing", /is not readable$/);
  });

  it("is syncing while the list of shards is not known", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, []);
    watch().known = false;
    assertUnavailable(await index.find(vmLookup(), 10), "syncing", /still syncing/);
  });

  it("is failing when the consumer's own shard fails, and names the shard for the log only", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer2", "vm-a", "my-vpc")]);
    watch().endpoint(B, [vmObject("consumer1", "vm-b", "my-vpc")], { error: "watch: 403 Forbidden" });
    const a = await index.find(vmLookup(), 10);
    // The deleter is told neither the shard nor the dependent type (another provider's); the log gets both.
    assertUnavailable(a, "failing", /^the dependents index is not readable$/);
    assert.ok(!a.ok && a.detail.includes(`${B}: watch: 403 Forbidden`) && a.detail.startsWith(KEY));
  });

  it("is failing when the list of shards itself fails and the consumer's shard is unknown", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, []);
    watch().slicesError = "endpoint slices: 403 Forbidden";
    assertUnavailable(await index.find(vmLookup(), 10), "failing", /is not readable/);
  });

  it("is 'not-indexed' (shown as still syncing) for a field path it does not track", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer1", "vm-a", "my-vpc")]);
    const a = await index.find(vmLookup({ fieldPaths: [fp(".spec.nics[*].vpcRef.name")] }), 10);
    assertUnavailable(a, "not-indexed", /^the dependents index is still syncing$/);
  });
});

describe("DependentsIndex: a field path change swaps the current watch for the next", () => {
  it("keeps answering the old paths from the current watch while the next one lists", async () => {
    const { index, built } = indexed(".spec.vpcRef.name");
    const current = built[0]!.watch;
    current.endpoint(A, [vmObject("consumer1", "vm-1", "my-vpc")]);
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name", ".spec.vpcRef.name")));
    assert.equal(built.length, 2);
    const next = built[1]!.watch;
    assert.equal(next.started, true);
    next.endpoint(A, [vmObject("consumer1", "vm-1", "my-vpc")], { synced: false });
    // The old path: from the current watch. The new one: not indexed there, the next has not listed.
    assert.deepEqual(names(await index.find(vmLookup(), 10)), ["vm-1"]);
    const nics = vmLookup({ fieldPaths: [fp(".spec.nics[*].vpcRef.name")] });
    assertUnavailable(await index.find(nics, 10), "syncing", /still syncing/);
    assert.equal(current.stopped, false);
    assert.deepEqual(
      index.health().map((h) => h.state),
      ["ready"],
    );
  });

  it("promotes the next watch once it has listed everything, and stops the current one", async () => {
    const { index, built, changes } = indexed(".spec.vpcRef.name");
    const current = built[0]!.watch;
    current.endpoint(A, []);
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name", ".spec.vpcRef.name")));
    const next = built[1]!.watch;
    const state = next.endpoint(A, [vmObject("consumer1", "vm-2", "my-vpc")], { synced: false });
    next.onChange(); // not listed yet: nothing changes
    assert.equal(current.stopped, false);
    state.synced = true;
    next.onChange();
    assert.equal(current.stopped, true);
    assert.equal(next.stopped, false);
    const nics = vmLookup({ fieldPaths: [fp(".spec.nics[*].vpcRef.name")] });
    assert.deepEqual(names(await index.find(nics, 10)), ["vm-2"]);
    assert.equal(index.size(), 1);
    assert.equal(changes(), 2);
  });

  it("does not promote a next watch that fails", () => {
    const { index, built } = indexed(".spec.vpcRef.name");
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name")));
    const next = built[1]!.watch;
    next.endpoint(A, [], { error: "403 Forbidden" });
    next.onChange();
    assert.equal(built[0]!.watch.stopped, false);
  });

  it("drops the next watch when the paths change back before it is ready; one watch per set of paths", () => {
    const { index, built } = indexed(".spec.vpcRef.name");
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name")));
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name"))); // the same again: no third watch
    assert.equal(built.length, 2);
    index.follow(registryOf(vmType(".spec.vpcRef.name")));
    assert.equal(built[1]!.watch.stopped, true);
    assert.equal(built[0]!.watch.stopped, false);
    assert.equal(built.length, 2);
  });

  it("stops the watches of a type no rule names any more, and all of them on stop", async () => {
    const { index, built } = indexed();
    index.follow(registryOf());
    assert.equal(built[0]!.watch.stopped, true);
    assertUnavailable(await index.find(vmLookup(), 10), "starting", /is starting/);
    index.follow(registryOf(vmType(".spec.vpcRef.name")));
    index.stop();
    assert.equal(built[1]!.watch.stopped, true);
    index.follow(registryOf(vmType(".spec.vpcRef.name")));
    assert.equal(built.length, 2, "no watch after stop");
  });
});

describe("DependentsIndex: the second look and what it reports", () => {
  it("drops a found dependent the shard no longer has, and counts every read", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer1", "vm-kept", "my-vpc"), vmObject("consumer1", "vm-gone", "my-vpc")]);
    watch().objects.delete(`${A} consumer1 ${VM_PATH}/vm-gone`);
    assert.deepEqual(names(await index.find(vmLookup({ namespace: "default" }), 10)), ["vm-kept"]);
    assert.deepEqual(index.confirmations, { kept: 1, gone: 1, error: 0 });
  });

  it("reads nothing for an empty answer from a consumer on no shard", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, []);
    assert.deepEqual(names(await index.find(vmLookup(), 10)), []);
    assert.deepEqual(watch().reads, []);
  });

  it("reports each type ready, syncing or failing, from the current watch", () => {
    const { index, watch } = indexed();
    assert.deepEqual(index.health(), [{ type: KEY, state: "ready", errors: [] }]);
    const a = watch().endpoint(A, [vmObject("consumer1", "vm-1", "my-vpc")], { synced: false });
    assert.deepEqual(index.health(), [{ type: KEY, state: "syncing", errors: [] }]);
    assert.equal(index.size(), 0, "an endpoint that has not listed counts nothing");
    a.synced = true;
    a.error = "watch: 403 Forbidden";
    assert.deepEqual(index.health(), [{ type: KEY, state: "failing", errors: ["watch: 403 Forbidden"] }]);
    assert.equal(index.size(), 1);
  });
});
