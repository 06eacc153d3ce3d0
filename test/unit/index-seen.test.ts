// What the dependents index tells the decision when it cannot answer: whether it ever had a complete view of the
// type in this process, and whether the consumer held dependents in it (decision.ts refuses only there).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import type { FinderAnswer } from "../../src/webhook/deletion/finder.ts";
import { VM_DEPENDENT, vmLookup } from "./helpers-rules.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

const A = "https://shard-a/services/apiexport/compute/compute.example.io";
const B = "https://shard-b/services/apiexport/compute/compute.example.io";

function indexed() {
  const { factory, built } = fakeWatches();
  const index = new DependentsIndex({ watch: factory, logger: pino({ level: "silent" }) });
  index.follow(registryOf(vmType(".spec.vpcRef.name")));
  return { index, watch: () => built[0]!.watch };
}

const seen = (a: FinderAnswer) => (a.ok ? "answered" : a.seen);
const holder = vmLookup();
const stranger = vmLookup({ consumer: "consumer9" as LogicalClusterName });

describe("DependentsIndex: the last good view in an unavailable answer", () => {
  it("a type it does not watch: never synced", async () => {
    const { index } = indexed();
    const other = vmLookup({ dependent: { ...VM_DEPENDENT, resource: "disks" } });
    assert.deepEqual(seen(await index.find(other, 10)), { everSynced: false, consumerSeen: false });
  });

  it("a type whose first list failed (no consent): never synced, nobody seen", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [], { synced: false, error: "list: 403 Forbidden" });
    assert.deepEqual(seen(await index.find(holder, 10)), { everSynced: false, consumerSeen: false });
  });

  it("a type that listed and then fails (revoked): synced, and only the consumers it held are seen", async () => {
    const { index, watch } = indexed();
    const a = watch().endpoint(A, [vmObject("consumer1", "vm-a", "my-vpc")]);
    a.error = "watch: 403 Forbidden";
    assert.deepEqual(seen(await index.find(holder, 10)), { everSynced: true, consumerSeen: true });
    assert.deepEqual(seen(await index.find(stranger, 10)), { everSynced: true, consumerSeen: false });
  });

  it("a type that listed with no endpoint, then has its slice refused: a complete view of nowhere", async () => {
    // Nobody bound the type (no endpoint), the watch listed that; then its provider rewrote the slice to URLs the
    // allow-list refuses. No consumer held dependents it could see: nobody's DELETE may wait for it.
    const { index, watch } = indexed();
    watch().onChange();
    watch().slicesError = "virtual workspace URL refused: its path is not /services/apiexport/compute/...";
    assert.deepEqual(seen(await index.find(stranger, 10)), { everSynced: true, consumerSeen: false });
  });

  it("a type whose endpoint list never listed and now fails: never synced", async () => {
    const { index, watch } = indexed();
    watch().known = false;
    watch().onChange();
    watch().slicesError = "list: 403 Forbidden";
    assert.deepEqual(seen(await index.find(stranger, 10)), { everSynced: false, consumerSeen: false });
  });

  it("a new shard that has not listed: not a complete view, though the consumer held dependents elsewhere", async () => {
    const { index, watch } = indexed();
    watch().endpoint(A, [vmObject("consumer2", "vm-a", "my-vpc")]);
    watch().endpoint(B, [], { synced: false });
    assert.deepEqual(seen(await index.find(stranger, 10)), { everSynced: false, consumerSeen: false });
  });
});
