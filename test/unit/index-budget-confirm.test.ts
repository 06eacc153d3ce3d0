// The second look's own budget: a token bucket of reads per consumer workspace on the fake clock (past it the index's
// blockers stand, unread), and the read cap the index passes with each GET.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { ConfirmRate } from "../../src/webhook/deletion/index/confirm-rate.ts";
import { CONFIRM_MAX_BYTES } from "../../src/webhook/deletion/index/confirm.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { vmLookup } from "./helpers-rules.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

describe("ConfirmRate", () => {
  it("gives each workspace its own bucket, refilled with time", async () => {
    const clock = new FakeClock();
    const rate = new ConfirmRate({ clock, perSecond: 2, burst: 4 });
    assert.equal(rate.take("a", 3), true);
    assert.equal(rate.take("a", 2), false, "one left");
    assert.equal(rate.take("b", 4), true, "b is not charged for a");
    await clock.advance(500);
    assert.equal(rate.take("a", 2), true);
    assert.equal(rate.take("a", 1), false);
    await clock.advance(60_000);
    assert.equal(rate.take("a", 4), true, "never more than the burst");
    assert.equal(rate.take("a", 1), false);
  });
});

describe("DependentsIndex: second looks per workspace", () => {
  it("stops reading for a workspace past its rate (its blockers stand) and keeps reading for the others", async () => {
    const clock = new FakeClock();
    const { factory, built } = fakeWatches();
    const index = new DependentsIndex({
      watch: factory,
      logger: pino({ level: "silent" }),
      confirmRate: { clock, perSecond: 1, burst: 2 },
    });
    index.follow(registryOf(vmType(".spec.vpcRef.name")));
    const w = built[0]!.watch;
    w.endpoint("https://shard", [vmObject("noisy", "vm-n", "my-vpc"), vmObject("calm", "vm-c", "my-vpc")]);
    const reads: { maxBodyBytes?: number }[] = [];
    const read = w.read.bind(w);
    w.read = (endpoint, cluster, path, opts?: { maxBodyBytes?: number }) => {
      reads.push(opts ?? {});
      return read(endpoint, cluster, path);
    };
    const noisy = vmLookup({ consumer: "noisy" as LogicalClusterName });
    for (let i = 0; i < 5; i++) assert.ok((await index.find(noisy, 10)).ok);
    assert.equal(reads.length, 2);
    assert.equal(index.confirmationsLimited, 3);
    const calm = await index.find(vmLookup({ consumer: "calm" as LogicalClusterName }), 10);
    assert.ok(calm.ok && calm.dependents[0]?.name === "vm-c");
    assert.equal(reads.length, 3);
    assert.ok(reads.every((r) => r.maxBodyBytes === CONFIRM_MAX_BYTES));
  });
});
