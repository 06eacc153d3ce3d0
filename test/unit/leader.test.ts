// Leader election against an in-memory Lease with optimistic concurrency and a fake clock.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LeaderElector, type Lease, type LeaseStore, microTime } from "../../src/controller/leader.ts";
import { ApiError } from "../../src/kcp/rest.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import type { Clock } from "../../src/util/clock.ts";

class MemoryLease {
  lease: Lease | undefined;
  private rv = 0;
  down = new Set<string>(); // identities whose requests fail (a partitioned replica)

  as(identity: string): LeaseStore {
    const check = (): void => {
      if (this.down.has(identity)) throw new Error("connection refused");
    };
    return {
      get: () => Promise.resolve().then(() => (check(), this.lease && structuredClone(this.lease))),
      create: (l) =>
        Promise.resolve().then(() => {
          check();
          if (this.lease) throw new ApiError("POST", "lease", 409, "AlreadyExists", "exists");
          this.lease = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
          return structuredClone(this.lease);
        }),
      update: (l) =>
        Promise.resolve().then(() => {
          check();
          if (l.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
            throw new ApiError("PUT", "lease", 409, "Conflict", "stale");
          this.lease = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
          return structuredClone(this.lease);
        }),
    };
  }
}

/** A clock that only moves when every candidate is asleep: each sleep advances it by its duration. */
function fakeTime(): { clock: Clock; t: { v: number } } {
  const t = { v: 1_700_000_000_000 };
  return {
    t,
    clock: {
      now: () => t.v,
      sleep: async (ms, signal) => {
        await new Promise((r) => setImmediate(r));
        if (!signal?.aborted) t.v += ms / 2; // two candidates sleep in turn
      },
      after: () => assert.fail("the elector sets no timers"),
    },
  };
}

function candidate(store: MemoryLease, identity: string, time: ReturnType<typeof fakeTime>) {
  const events: string[] = [];
  const elector = new LeaderElector({
    store: store.as(identity),
    name: "lease",
    namespace: "default",
    identity,
    logger: silentLogger(),
    onStartedLeading: () => events.push("start"),
    onStoppedLeading: () => events.push("stop"),
    clock: time.clock,
  });
  const ac = new AbortController();
  const done = elector.run(ac.signal);
  return { elector, events, stop: async () => (ac.abort(), await done) };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 5_000; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe("LeaderElector", () => {
  it("formats MicroTime with six fractional digits", () => {
    assert.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), "2026-01-02T03:04:05.678000Z");
  });

  it("lets exactly one of two candidates lead, and hands over at once on release", async () => {
    const store = new MemoryLease();
    const time = fakeTime();
    const a = candidate(store, "a", time);
    await until(() => a.elector.isLeader(), "a leads");
    const b = candidate(store, "b", time);
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setImmediate(r));
      assert.ok(!(a.elector.isLeader() && b.elector.isLeader()), "never two leaders");
    }
    assert.equal(b.elector.isLeader(), false);
    const before = time.t.v;
    await a.stop();
    assert.deepEqual(a.events, ["start", "stop"]);
    assert.equal(store.lease?.spec?.holderIdentity, "");
    await until(() => b.elector.isLeader(), "b leads after release");
    assert.ok(time.t.v - before < 15_000, "took over before the lease would have expired");
    assert.equal(store.lease?.spec?.leaseTransitions, 1);
    await b.stop();
  });

  it("takes over from a leader that stopped renewing only after the lease duration, and the old leader stops first", async () => {
    const store = new MemoryLease();
    const time = fakeTime();
    const a = candidate(store, "a", time);
    await until(() => a.elector.isLeader(), "a leads");
    const b = candidate(store, "b", time);
    await new Promise((r) => setImmediate(r));
    store.down.add("a");
    const partitioned = time.t.v;
    await until(() => {
      assert.ok(!(a.elector.isLeader() && b.elector.isLeader()), "never two leaders");
      return b.elector.isLeader();
    }, "b leads");
    assert.ok(time.t.v - partitioned >= 15_000, `b waited ${time.t.v - partitioned} ms`);
    assert.equal(a.elector.isLeader(), false, "a no longer believes it leads");
    assert.deepEqual(a.events, ["start", "stop"]);
    await Promise.all([a.stop(), b.stop()]);
  });
});
