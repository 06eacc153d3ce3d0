// The workspace resolver's cache under fresh paths (a rule author's dry-run applies, each with new paths): 50,000
// paths resolved one after another cost a constant number of Map operations each, counted by a spy on Map (not
// timed), and the cache never holds more than its cap. The paths in use keep their answers, and a path that resolved
// keeps its last good cluster through a transient failure even after fresh "not found" paths pushed its answer out.
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { logicalClusterName, workspacePath } from "../../src/api/wire.ts";
import { DEFAULT_MAX_CACHED_PATHS, WorkspaceResolver } from "../../src/kcp/workspaces.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { CountingKcp } from "./resolver-fake-kcp.ts";

const INSERTS = 50_000;
const BATCH = 5_000;

/** Counts Map operations (get/set/has/delete and every step of an iteration) while installed. */
class MapSpy {
  ops = 0;
  private readonly saved: [PropertyKey, unknown][] = [];

  install(): void {
    const proto = Map.prototype as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>;
    const count = (): void => void this.ops++;
    for (const name of ["get", "set", "has", "delete"] as const) {
      const original = proto[name]!;
      this.saved.push([name, original]);
      proto[name] = function (this: unknown, ...args: unknown[]) {
        count();
        return original.apply(this, args);
      };
    }
    for (const name of ["entries", "keys", "values", Symbol.iterator] as const) {
      const original = proto[name]!;
      this.saved.push([name, original]);
      proto[name] = function* (this: unknown): Generator<unknown> {
        for (const item of original.call(this) as Iterable<unknown>) {
          count();
          yield item;
        }
      };
    }
    this.saved.push(["forEach", proto["forEach"]]);
    proto["forEach"] = () => assert.fail("the resolver's cache is walked with forEach");
  }

  uninstall(): void {
    const proto = Map.prototype as unknown as Record<PropertyKey, unknown>;
    for (const [name, original] of this.saved.reverse()) proto[name] = original;
    this.saved.length = 0;
  }
}

describe("WorkspaceResolver cache", () => {
  const spy = new MapSpy();
  beforeEach(() => (spy.ops = 0));
  afterEach(() => spy.uninstall());

  it("resolves 50,000 fresh paths at a constant number of Map operations each, within its cap", async () => {
    // Every other fresh path exists, so last good clusters fill up too; root:org:net is a genuine rule's path.
    const kcp = new CountingKcp({ "root:org": "org1", "root:org:net": "net1" });
    for (let i = 0; i < INSERTS; i += 2) kcp.workspaces.set(`root:org:p${i}`, `c${i}`);
    const resolver = new WorkspaceResolver({ base: kcp, clock: new FakeClock() });
    const resolve = (p: string) => resolver.resolve(workspacePath(p));
    const perInsert: number[] = [];
    spy.install();
    for (let b = 0; b < INSERTS / BATCH; b++) {
      const before = spy.ops;
      for (let i = b * BATCH; i < (b + 1) * BATCH; i++) {
        await resolve(`root:org:p${i}`);
        if (i % 100 === 0) await resolve("root:org:net");
      }
      perInsert.push((spy.ops - before) / BATCH);
      const { answers, lastGood } = resolver.cached();
      assert.ok(answers <= DEFAULT_MAX_CACHED_PATHS && lastGood <= DEFAULT_MAX_CACHED_PATHS, `${answers}/${lastGood}`);
    }
    spy.uninstall();
    // A full sweep of the cache per insert would be thousands per insert once the cache is full.
    assert.ok(Math.max(...perInsert) <= 20, `Map operations per insert by batch: ${perInsert.join(", ")}`);
    assert.ok(Math.max(...perInsert) <= 2 * Math.min(...perInsert), perInsert.join(", "));
    assert.deepEqual(resolver.cached(), { answers: DEFAULT_MAX_CACHED_PATHS, lastGood: DEFAULT_MAX_CACHED_PATHS });
    assert.equal(kcp.reads.filter((p) => p === "root:org:net").length, 1, "the path in use kept its answer");
    const reads = kcp.gets;
    await resolve("root:org:p0");
    assert.equal(kcp.gets, reads + 1, "the least recently used path was forgotten and is read again");
  });

  it("keeps a resolved path's last good cluster when fresh missing paths push its answer out", async () => {
    const kcp = new CountingKcp({ "root:org": "org1", "root:org:net": "net1" });
    const clock = new FakeClock();
    const resolver = new WorkspaceResolver({ base: kcp, clock, maxEntries: 100 });
    const resolve = (p: string) => resolver.resolve(workspacePath(p));
    assert.deepEqual(await resolve("root:org:net"), { ok: true, cluster: logicalClusterName("net1") });
    for (let i = 0; i < 1_000; i++) await resolve(`root:org:gone${i}`);
    assert.deepEqual(resolver.cached(), { answers: 100, lastGood: 1 });
    kcp.failing.set("root:org:net", 500);
    const r = await resolve("root:org:net");
    assert.ok(r.ok && r.stale && r.cluster === "net1", JSON.stringify(r));
    assert.equal(kcp.reads.filter((p) => p === "root:org:net").length, 2, "read again: its answer was forgotten");
  });

  it("refuses a cap that is not a positive integer", () => {
    assert.throws(() => new WorkspaceResolver({ base: new CountingKcp(), maxEntries: 0 }), /positive integer, got 0/);
  });
});
