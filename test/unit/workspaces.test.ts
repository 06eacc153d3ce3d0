// The workspace resolver against a counting kcp stand-in on a fake clock: what it answers, and how many reads each
// answer costs (cached good and definite answers, backoff for transient ones, one read per path at a time, a walk up
// that stops at a cached level, no read for a path deeper than the cap).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { logicalClusterName, workspacePath } from "../../src/api/wire.ts";
import { WorkspaceResolver } from "../../src/kcp/workspaces.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { CountingKcp } from "./resolver-fake-kcp.ts";

function setup(workspaces: Record<string, string> = {}) {
  const kcp = new CountingKcp({ "root:org": "org1", "root:org:net": "net1", ...workspaces });
  const clock = new FakeClock();
  const resolver = new WorkspaceResolver({ base: kcp, clock });
  const resolve = (p: string) => resolver.resolve(workspacePath(p));
  return { kcp, clock, resolver, resolve };
}

const net1 = { ok: true, cluster: logicalClusterName("net1") };

describe("WorkspaceResolver", () => {
  it("resolves a nested path in one read, trusts it for a minute, then reads it again", async () => {
    const { kcp, clock, resolve } = setup();
    assert.deepEqual(await resolve("root:org:net"), net1);
    assert.deepEqual(await resolve("root:org:net"), net1);
    assert.equal(kcp.gets, 1);
    await clock.advance(59_999);
    await resolve("root:org:net");
    assert.equal(kcp.gets, 1);
    await clock.advance(1);
    assert.deepEqual(await resolve("root:org:net"), net1);
    assert.equal(kcp.gets, 2);
  });

  it("reads a path that does not exist once a minute, not on every call", async () => {
    const { kcp, clock, resolve } = setup();
    const gone = { ok: false, reason: "workspace root:org:gone not found" };
    for (let t = 0; t < 60; t++) {
      assert.deepEqual(await resolve("root:org:gone"), gone);
      await clock.advance(1_000);
    }
    assert.equal(kcp.gets, 1);
    await resolve("root:org:gone");
    assert.equal(kcp.gets, 2);
  });

  it("walks up from a 403 to the first missing level once, and answers paths below it without reading", async () => {
    const { kcp, resolve } = setup();
    assert.deepEqual(await resolve("root:org:gone:a:b"), {
      ok: false,
      reason: "workspace root:org:gone:a:b not found (workspace root:org:gone not found)",
    });
    assert.deepEqual(kcp.reads, ["root:org:gone:a:b", "root:org:gone:a", "root:org:gone"]);
    assert.deepEqual(await resolve("root:org:gone:c:d:e"), {
      ok: false,
      reason: "workspace root:org:gone:c:d:e not found (workspace root:org:gone not found)",
    });
    assert.equal(kcp.gets, 3);
  });

  it("stops the walk at a cached level", async () => {
    const { kcp, resolve } = setup();
    await resolve("root:org");
    await resolve("root:org:gone:x");
    assert.deepEqual(kcp.reads, ["root:org", "root:org:gone:x", "root:org:gone"]);
  });

  it("reads once for callers asking for the same path at the same time", async () => {
    const { kcp, resolve } = setup();
    const answers = await Promise.all(Array.from({ length: 20 }, () => resolve("root:org:gone:a:b")));
    assert.equal(new Set(answers.map((a) => JSON.stringify(a))).size, 1);
    assert.equal(kcp.gets, 3);
  });

  it("calls a 403 where the parent exists transient (no permission), at the cost of the parent's read", async () => {
    const { kcp, resolve } = setup();
    kcp.forbidden.add("root:org");
    const r = await resolve("root:org:net");
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.transient && /not allowed to read workspace root:org:net/.test(r.reason), JSON.stringify(r));
    assert.deepEqual(kcp.reads, ["root:org:net", "root:org"]);
  });

  it("retries a transient failure after 5, 10, 20 and 40 s, then every minute, with the last good answer", async () => {
    const { kcp, clock, resolve } = setup();
    assert.deepEqual(await resolve("root:org:net"), net1);
    await clock.advance(60_000);
    kcp.failing.set("root:org:net", 500);
    const readAt: number[] = [];
    for (let t = 0; t <= 200; t++) {
      const before = kcp.gets;
      const r = await resolve("root:org:net");
      assert.ok(r.ok && r.stale, "the last good cluster, marked stale");
      if (kcp.gets > before) readAt.push(t);
      await clock.advance(1_000);
    }
    assert.deepEqual(readAt, [0, 5, 15, 35, 75, 135, 195]);
    kcp.failing.clear();
    await clock.advance(60_000);
    assert.deepEqual(await resolve("root:org:net"), net1);
  });

  it("reads a workspace still being set up again after 5 s, not after a minute", async () => {
    const { kcp, clock, resolve } = setup({ "root:org:new": "" });
    const r = await resolve("root:org:new");
    assert.ok(!r.ok && !r.transient && /has no logical cluster yet/.test(r.reason), JSON.stringify(r));
    kcp.workspaces.set("root:org:new", "new1");
    await clock.advance(4_999);
    assert.equal((await resolve("root:org:new")).ok, false);
    await clock.advance(1);
    assert.deepEqual(await resolve("root:org:new"), { ok: true, cluster: logicalClusterName("new1") });
    assert.equal(kcp.gets, 2);
  });

  it("drops the last good answer on a definite one", async () => {
    const { kcp, clock, resolve } = setup();
    await resolve("root:org:net");
    kcp.workspaces.delete("root:org:net");
    await clock.advance(60_000);
    assert.deepEqual(await resolve("root:org:net"), { ok: false, reason: "workspace root:org:net not found" });
  });

  it("refuses a path deeper than the cap without reading it, and answers root and non-root paths at once", async () => {
    const { kcp, resolve } = setup();
    const r = await resolve(`root${":a".repeat(10)}`);
    assert.deepEqual(r, {
      ok: false,
      reason: `workspace path root${":a".repeat(10)} has 11 segments, more than the 10 allowed`,
    });
    assert.deepEqual(await resolve("root"), { ok: true, cluster: logicalClusterName("root") });
    assert.equal((await resolve("org")).ok, false);
    assert.equal(kcp.gets, 0);
  });

  it("reads again after invalidate (the path and below) and invalidateCluster", async () => {
    const { kcp, resolver, resolve } = setup();
    await resolve("root:org");
    await resolve("root:org:net");
    resolver.invalidate("root:org");
    await resolve("root:org:net");
    assert.equal(kcp.gets, 3);
    resolver.invalidateCluster("net1");
    await resolve("root:org:net");
    await resolve("root:org");
    assert.deepEqual(kcp.reads, ["root:org", "root:org:net", "root:org:net", "root:org:net", "root:org"]);
  });
});
