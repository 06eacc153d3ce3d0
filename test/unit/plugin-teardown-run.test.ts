// The teardown run loop without kcp: a fake workspace that refuses deletes the way the webhook does (causes naming
// the dependents still there), VMs held by a finalizer a fake backend clears a while after their delete, and a
// clock that moves only when the loop sleeps. Checks order (no object deleted while something references it), that
// the run sends no dry run (a refused real DELETE names the blockers and deletes nothing), finalizer waits, cycles,
// timeouts with the holds, other refusals; the plan's dry runs limited to protected types; and the plan's JSON.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { DeleteAnswer, Refusal } from "../../src/plugin/causes.ts";
import { executeTeardown } from "../../src/plugin/commands/teardown/execute.ts";
import { objectId } from "../../src/plugin/objects.ts";
import type { PlanObject } from "../../src/plugin/commands/teardown/plan.ts";
import { planJson } from "../../src/plugin/commands/teardown/render.ts";
import { reportJson, reportText, teardownReport } from "../../src/plugin/commands/teardown/report.ts";
import { protectedTypes, survey, type TeardownApi } from "../../src/plugin/commands/teardown/survey.ts";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import type { Clock } from "../../src/util/clock.ts";
import { age, finalizerOwner, UNKNOWN_OWNER } from "../../src/plugin/finalizers.ts";

/** Time moves only when someone sleeps: the loop runs without waiting. */
class SteppingClock implements Clock {
  t = 0;
  now = (): number => this.t;
  sleep = (ms: number): Promise<void> => {
    this.t += ms;
    return Promise.resolve();
  };
  after = (): { cancel(): void } => ({ cancel: () => undefined });
}

interface FakeObj {
  o: PlanObject;
  refs: string[];
  deletedAt?: number;
}

const KINDS: Record<string, string> = { vms: "VirtualMachine", subnets: "Subnet", vpcs: "VPC" };

class FakeWorkspace implements TeardownApi {
  readonly objs = new Map<string, FakeObj>();
  refused = 0;
  deletes: string[] = [];
  /** Annotation writes, `+name` set and `-name` removed, in order. */
  patches: string[] = [];
  readonly clock: SteppingClock;
  /** When the backend clears a finalizer after the delete; Infinity: never. */
  readonly finalizerMs: number;
  constructor(clock: SteppingClock, finalizerMs = 3_000) {
    this.clock = clock;
    this.finalizerMs = finalizerMs;
  }

  add(resource: string, name: string, refs: string[] = [], finalizers: string[] = []): void {
    const o: PlanObject = {
      id: objectId({ group: "g", resource, namespace: "default", name }),
      group: "g",
      version: "v1",
      resource,
      kind: KINDS[resource] ?? resource,
      namespace: "default",
      name,
      uid: `uid-${name}`,
      finalizers,
      deleting: false,
      skipProtection: false,
    };
    this.objs.set(o.id, {
      o,
      refs: refs.map((r) =>
        objectId({ group: "g", resource: r.split("/")[0]!, namespace: "default", name: r.split("/")[1]! }),
      ),
    });
  }

  private tick(): void {
    for (const [id, f] of this.objs)
      if (f.deletedAt !== undefined && this.clock.now() - f.deletedAt >= this.finalizerMs) this.objs.delete(id);
  }

  private refusal(o: PlanObject): Refusal | undefined {
    const by = [...this.objs.values()].filter((f) => f.refs.includes(o.id));
    if (by.length === 0 || o.skipProtection) return undefined;
    const blockers = by.map((f) => ({ kind: f.o.kind, name: f.o.name, field: ".spec.ref" }));
    return {
      code: 409,
      reason: "Conflict",
      message: "denied",
      webhook: "w",
      blockers,
      source: "causes",
      complete: true,
    };
  }

  list(): Promise<PlanObject[]> {
    this.tick();
    return Promise.resolve([...this.objs.values()].map((f) => ({ ...f.o })));
  }
  dryRun(o: PlanObject): Promise<DeleteAnswer> {
    const r = this.refusal(o);
    return Promise.resolve(r ? { outcome: "refused", status: 409, refusal: r } : { outcome: "allowed" });
  }
  delete(o: PlanObject): Promise<DeleteAnswer> {
    const f = this.objs.get(o.id);
    if (!f) return Promise.resolve({ outcome: "gone" });
    const r = this.refusal(f.o);
    if (r) {
      this.refused++;
      return Promise.resolve({ outcome: "refused", status: 409, refusal: r });
    }
    // Everything that names it must be gone (finalizers included): else the order was wrong.
    this.deletes.push(o.id);
    if (f.o.finalizers.length === 0) this.objs.delete(o.id);
    else {
      f.o.deleting = true;
      f.deletedAt ??= this.clock.now();
      f.o.deletionTimestamp ??= new Date(f.deletedAt).toISOString();
    }
    return Promise.resolve({ outcome: "allowed" });
  }
  get(o: PlanObject): Promise<PlanObject | undefined> {
    this.tick();
    const f = this.objs.get(o.id);
    return Promise.resolve(f ? { ...f.o } : undefined);
  }
  annotate(o: PlanObject, on: boolean): Promise<"done" | "replaced"> {
    const f = this.objs.get(o.id);
    if (!f || f.o.uid !== o.uid) return Promise.resolve("replaced");
    f.o.skipProtection = on;
    this.patches.push(`${on ? "+" : "-"}${o.name}`);
    return Promise.resolve("done");
  }
}

function chain(ws: FakeWorkspace, n: number): void {
  for (let i = 0; i < n; i++) {
    ws.add("vpcs", `vpc-${i}`);
    ws.add("subnets", `subnet-${i}`, [`vpcs/vpc-${i}`]);
    ws.add("vms", `vm-${i}`, [`subnets/subnet-${i}`, `vpcs/vpc-${i}`], ["backend.test/hold"]);
  }
}

/** A Secret or ConfigMap as teardown lists it (kcp-api.ts marks the core types a rule may protect as local targets). */
function localTarget(ws: FakeWorkspace, resource: string, name: string): void {
  ws.add(resource, name);
  ws.objs.get(objectId({ group: "g", resource, namespace: "default", name }))!.o.localTarget = true;
}

const forbidden = (): Promise<DeleteAnswer> =>
  Promise.resolve({
    outcome: "refused",
    status: 403,
    refusal: { code: 403, reason: "Forbidden", message: "no", blockers: [], source: "none", complete: false },
  });

/** a ⇄ b, with a named for skip-protection. */
function namedCycle(ws: FakeWorkspace): void {
  ws.add("vpcs", "a", ["subnets/b"]);
  ws.add("subnets", "b", ["vpcs/a"]);
  ws.objs.get("g/vpcs/default/a")!.o.named = true;
}

const opts = (clock: Clock, timeoutMs = 600_000) => ({
  concurrency: 4,
  timeoutMs,
  clock,
  pollMs: 500,
  progress: (): void => undefined,
});

describe("teardown run loop", () => {
  it("empties a VM → Subnet → VPC workspace wave by wave, waiting out the VMs' finalizer", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    chain(ws, 5);
    const lines: string[] = [];
    const r = await executeTeardown(ws, { ...opts(clock), progress: (l) => lines.push(l) });
    assert.equal(r.ok, true, r.problem);
    assert.equal(ws.objs.size, 0);
    // Each Subnet and VPC is refused once, while the VMs are Terminating; the fake never deletes a referenced object.
    assert.equal(ws.refused, 10);
    assert.equal(r.refusedDeletes, 10);
    assert.equal(r.deleted, 15);
    assert.deepEqual(
      r.waves.map((w) => new Set(w.map((id) => id.split("/")[1]))),
      [new Set(["vms"]), new Set(["subnets"]), new Set(["vpcs"])],
    );
    assert.ok(clock.now() >= 3_000, "it waited for the finalizer");
    assert.match(lines[0]!, /^round 1: 15 object\(s\) left, 0 deleting, 0 deleted/);
  });

  it("pipelined: a VPC goes once its own VM is gone, while another VM still waits; no dry run", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    for (const n of ["fast", "slow"]) {
      ws.add("vpcs", `vpc-${n}`);
      ws.add("vms", `vm-${n}`, [`vpcs/vpc-${n}`], n === "slow" ? ["backend.test/hold"] : []);
    }
    const at = new Map<string, number>();
    const del = ws.delete.bind(ws);
    ws.delete = (o) => (at.set(o.name, clock.now()), del(o));
    let dryRuns = 0;
    const dry = ws.dryRun.bind(ws);
    ws.dryRun = (o) => (dryRuns++, dry(o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.ok(at.get("vpc-fast")! < 3_000, "vpc-fast did not wait for vm-slow's finalizer");
    assert.ok(at.get("vpc-slow")! >= 3_000, "vpc-slow waited for vm-slow to go");
    // 6 requests: a DELETE per object, and one refused per VPC asked while its VM was there (a dry run and a
    // delete per object, and a dry run again per VPC, made 10).
    assert.equal(dryRuns, 0);
    assert.equal(at.size, 4);
    assert.equal(ws.deletes.length + ws.refused, 6);
    assert.equal(ws.refused, 2);
    assert.equal(ws.deletes[0], "g/vms/default/vm-slow", "the object a finalizer holds is deleted first");
  });

  it("a finalizer that never clears: stops at --timeout naming each object and what holds it", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock, Infinity);
    chain(ws, 2);
    const r = await executeTeardown(ws, opts(clock, 10_000));
    assert.equal(r.ok, false);
    assert.match(r.problem!, /timed out waiting for 2 object\(s\) to go/);
    assert.deepEqual(
      r.left.filter((o) => o.deleting).map((o) => o.finalizers),
      [["backend.test/hold"], ["backend.test/hold"]],
    );
    // The report: each VM Terminating with its finalizer named, each Subnet and VPC still referenced by what is left.
    const rep = teardownReport(r, clock.now());
    assert.equal(rep.complete, false);
    const why = Object.fromEntries(rep.left.map((o) => [o.name, `${o.reason}: ${o.detail}`]));
    const held = `Terminating, held by finalizer(s) backend.test/hold; backend.test/hold → ${UNKNOWN_OWNER}`;
    const since = (s: string): string => `; since 1970-01-01T00:00:${s}Z`;
    assert.deepEqual(why, {
      "vm-0": `terminating: ${held}${since("00.000")} (${age(clock.now() / 1000)} ago)`,
      "vm-1": `terminating: ${held}${since("00.000")} (${age(clock.now() / 1000)} ago)`,
      "subnet-0": "blocked: still referenced by VirtualMachine/default/vm-0",
      "subnet-1": "blocked: still referenced by VirtualMachine/default/vm-1",
      "vpc-0": "blocked: still referenced by Subnet/default/subnet-0, VirtualMachine/default/vm-0",
      "vpc-1": "blocked: still referenced by Subnet/default/subnet-1, VirtualMachine/default/vm-1",
    });
    const text = reportText(r, { workspace: "root:c", namespace: "default" }, clock.now());
    assert.match(text, /NOT finished: timed out waiting for 2 object\(s\) to go/);
    assert.match(
      text,
      /VirtualMachine\/default\/vm-0 +terminating +Terminating, held by finalizer\(s\) backend.test\/hold/,
    );
  });

  it("the report names who usually removes each finalizer (the one owner table) and since when, by the clock given", () => {
    const since = "2026-11-28T05:58:55Z";
    const now = Date.parse(since) + 65_000;
    const vm = (name: string, finalizers: string[], deletionTimestamp?: string): PlanObject => ({
      id: objectId({ group: "g", resource: "vms", namespace: "default", name }),
      group: "g",
      version: "v1",
      resource: "vms",
      kind: "VirtualMachine",
      namespace: "default",
      name,
      finalizers,
      deleting: true,
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
      skipProtection: false,
    });
    const r = {
      ok: false,
      deleted: 0,
      refusedDeletes: 0,
      waves: [],
      elapsedMs: 1000,
      problem: "timed out waiting for 2 object(s) to go",
      left: [vm("synced", ["syncagent.kcp.io/cleanup", "orphan"], since), vm("no-time", [])],
      blockedBy: new Map<string, string[]>(),
      failures: new Map<string, string>(),
    };
    const ctx = { workspace: "root:c", namespace: "default" };
    const doc = JSON.parse(reportJson(r, ctx, now)) as {
      left: { name: string; detail: string; finalizers: string[]; terminating?: unknown }[];
    };
    const synced = doc.left.find((o) => o.name === "synced")!;
    assert.deepEqual(synced.finalizers, ["syncagent.kcp.io/cleanup", "orphan"], "the names as before");
    assert.deepEqual(synced.terminating, {
      since,
      ageSeconds: 65,
      finalizers: [
        { name: "syncagent.kcp.io/cleanup", ...finalizerOwner("syncagent.kcp.io/cleanup") },
        { name: "orphan", ...finalizerOwner("orphan") },
      ],
    });
    assert.equal(
      synced.detail,
      "Terminating, held by finalizer(s) syncagent.kcp.io/cleanup, orphan; syncagent.kcp.io/cleanup → api-syncagent; " +
        `orphan → Kubernetes (the garbage collector); since ${since} (1m5s ago)`,
    );
    // No deletionTimestamp shown and no finalizer left: nothing made up.
    assert.deepEqual(doc.left.find((o) => o.name === "no-time")!.terminating, { finalizers: [] });
    const text = reportText(r, ctx, now);
    assert.match(text, /VirtualMachine\/default\/synced +terminating +Terminating, held by finalizer\(s\) syncagent/);
    assert.match(text, /orphan → Kubernetes \(the garbage collector\); since 2026-11-28T05:58:55Z \(1m5s ago\)/);
    assert.match(text, /no-time +terminating +Terminating, no finalizer left: deletion still in progress\s*$/m);
  });

  it("a cycle: nothing on it is deleted, the report names it", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "a", ["subnets/b"]);
    ws.add("subnets", "b", ["vpcs/a"]);
    ws.add("vms", "free");
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, false);
    assert.equal(r.deleted, 1);
    assert.deepEqual(r.plan?.cycles, [["g/subnets/default/b", "g/vpcs/default/a"]]);
    assert.equal(ws.objs.size, 2);
  });

  it("skip-protection named for one cycle member: it goes in the final wave, then the other", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "a", ["subnets/b"]);
    ws.add("subnets", "b", ["vpcs/a"]);
    ws.add("vms", "free");
    ws.objs.get("g/vpcs/default/a")!.o.named = true;
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.deepEqual(ws.deletes, ["g/vms/default/free", "g/vpcs/default/a", "g/subnets/default/b"]);
    assert.deepEqual(ws.patches, ["+a"]);
  });

  it("a named object is ordered like the rest: its dependents go first, and it needs no annotation", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    chain(ws, 1);
    ws.objs.get("g/vpcs/default/vpc-0")!.o.named = true;
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.deepEqual(ws.deletes, ["g/vms/default/vm-0", "g/subnets/default/subnet-0", "g/vpcs/default/vpc-0"]);
    assert.deepEqual(ws.patches, []);
  });

  it("a named object replaced since it was listed (stale uid): not annotated, not deleted", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    namedCycle(ws);
    const list = ws.list.bind(ws);
    // Every list shows the object as it was: the one there now has another uid.
    ws.list = async () => (await list()).map((o) => (o.name === "a" ? { ...o, uid: "uid-old" } : o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, false);
    assert.deepEqual(ws.deletes, []);
    assert.deepEqual(ws.patches, []);
    assert.equal(ws.objs.size, 2);
    assert.match(
      teardownReport(r, clock.now()).left.find((o) => o.name === "a")!.detail,
      /not annotated: gone or replaced/,
    );
  });

  it("the delete of an annotated object fails: the annotation is taken off again", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    namedCycle(ws);
    ws.delete = forbidden;
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, false);
    assert.match(r.failures.get("g/vpcs/default/a")!, /delete refused \(403 Forbidden\)/);
    assert.deepEqual(ws.patches, ["+a", "-a"]);
    assert.equal(ws.objs.get("g/vpcs/default/a")!.o.skipProtection, false);
  });

  it("a delete that throws after the annotation: the annotation is taken off, the error goes on", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    namedCycle(ws);
    ws.delete = () => Promise.reject(new Error("socket hang up"));
    await assert.rejects(executeTeardown(ws, opts(clock)), /socket hang up/);
    assert.deepEqual(ws.patches, ["+a", "-a"]);
  });

  it("a dependent already Terminating counts as present: its VPC waits until it is gone", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "vpc-0");
    ws.add("vms", "vm-0", ["vpcs/vpc-0"], ["backend.test/hold"]);
    const vm = ws.objs.get("g/vms/default/vm-0")!;
    vm.o.deleting = true;
    vm.deletedAt = 0;
    const at = new Map<string, number>();
    const del = ws.delete.bind(ws);
    ws.delete = (o) => (at.set(o.name, clock.now()), del(o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.deepEqual(ws.deletes, ["g/vpcs/default/vpc-0"]);
    assert.ok(at.get("vpc-0")! >= 3_000, "the VPC's delete waited for the Terminating VM to go");
  });

  it("local targets: Secrets and ConfigMaps wait until no Endpoint (held by a finalizer) is left; 0 refused", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    for (let i = 0; i < 3; i++) {
      localTarget(ws, "secrets", `s-${i}`);
      localTarget(ws, "configmaps", `ca-${i}`);
      ws.add("endpoints", `e-${i}`, [`secrets/s-${i}`, `configmaps/ca-${i}`], ["backend.test/hold"]);
    }
    localTarget(ws, "secrets", "free");
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.equal(ws.objs.size, 0);
    assert.equal(ws.refused, 0, "no Secret or ConfigMap was asked while an Endpoint named it");
    assert.equal(r.refusedDeletes, 0);
    const endpoints = ws.deletes.filter((id) => id.includes("/endpoints/"));
    assert.deepEqual(ws.deletes.slice(0, 3), endpoints, ws.deletes.join(" "));
    assert.ok(clock.now() >= 3_000, "the Secrets waited for the Endpoints' finalizer");
  });

  it("local targets: an Endpoint that cannot go holds the Secrets only until the final wave", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    localTarget(ws, "secrets", "held");
    localTarget(ws, "secrets", "free");
    ws.add("endpoints", "e1", ["secrets/held"]);
    const del = ws.delete.bind(ws);
    ws.delete = (o) => (o.name === "e1" ? forbidden() : del(o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, false);
    assert.deepEqual(ws.deletes, ["g/secrets/default/free"], "the free Secret went in the final wave");
    assert.deepEqual(r.left.map((o) => o.name).sort(), ["e1", "held"]);
  });

  it("a delete refused for another reason is noted, the rest goes on, and the report names the refusal", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "locked");
    chain(ws, 1);
    const del = ws.delete.bind(ws);
    let tries = 0;
    ws.delete = (o) => (o.name === "locked" ? (tries++, forbidden()) : del(o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, false);
    assert.equal(r.deleted, 3, "the chain went despite the refusal");
    assert.equal(tries, 2, "once in order, once more in the final wave");
    assert.deepEqual(
      r.left.map((o) => o.name),
      ["locked"],
    );
    const json = JSON.parse(reportJson(r, { workspace: "root:c", namespace: "default" }, clock.now())) as {
      kind: string;
      complete: boolean;
      problem: string;
      left: { id: string; reason: string; detail: string }[];
    };
    assert.equal(json.kind, "TeardownReport");
    assert.equal(json.complete, false);
    assert.match(json.problem, /1 object\(s\) cannot be deleted/);
    assert.deepEqual(json.left, [
      {
        id: "g/vpcs/default/locked",
        kind: "VPC",
        namespace: "default",
        name: "locked",
        reason: "failed",
        detail: "delete refused (403 Forbidden): no",
        finalizers: [],
        blockedBy: [],
      },
    ]);
  });

  it("unknown order goes last, in one final wave: an object without an answer and a named cycle, after the chain", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock, 0);
    chain(ws, 1);
    namedCycle(ws);
    ws.add("vpcs", "mute");
    const del = ws.delete.bind(ws);
    // No answer for "mute" until the ordered part is done: its order stays unknown.
    ws.delete = (o) =>
      o.name === "mute" && ws.objs.has("g/vpcs/default/vpc-0") ? Promise.reject(new Error("no answer")) : del(o);
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    const ordered = ["g/vms/default/vm-0", "g/subnets/default/subnet-0", "g/vpcs/default/vpc-0"];
    assert.deepEqual(ws.deletes.slice(0, 3), ordered, "the known order first");
    assert.deepEqual(ws.deletes.slice(3), ["g/vpcs/default/mute", "g/vpcs/default/a", "g/subnets/default/b"]);
    assert.deepEqual(ws.patches, ["+a"], "only the named cycle member skips protection");
  });

  it("the report of a cycle: both members named with the cycle, and the skip-protection that breaks it", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "a", ["subnets/b"]);
    ws.add("subnets", "b", ["vpcs/a"]);
    const r = await executeTeardown(ws, opts(clock));
    const rep = teardownReport(r, clock.now());
    assert.deepEqual(
      rep.left.map((o) => [o.name, o.reason]),
      [
        ["b", "cycle"],
        ["a", "cycle"],
      ],
    );
    assert.deepEqual(rep.cycles, [["g/subnets/default/b", "g/vpcs/default/a"]]);
    assert.match(reportText(r, { workspace: "root:c" }, clock.now()), /--skip-protection subnets\.g\/default\/b/);
  });

  it("a DELETE without an answer is asked once more (its uid precondition makes that safe)", async () => {
    const clock = new SteppingClock();
    const ws = new FakeWorkspace(clock);
    ws.add("vpcs", "vpc-0");
    const del = ws.delete.bind(ws);
    let calls = 0;
    ws.delete = (o) => (++calls === 1 ? Promise.reject(new Error("socket hang up")) : del(o));
    const r = await executeTeardown(ws, opts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.equal(calls, 2);
    assert.equal(ws.objs.size, 0);
  });

  it("--plan -o json: three waves in order, edges, finalizer holds", async () => {
    const ws = new FakeWorkspace(new SteppingClock());
    chain(ws, 1);
    const { plan } = await survey(ws, await ws.list(), 4);
    const doc = JSON.parse(planJson(plan, { workspace: "root:c", namespace: "default" })) as {
      kind: string;
      complete: boolean;
      waves: string[][];
      objects: { name: string; wave: number; blockedBy: string[] }[];
      finalizerHolds: { id: string }[];
    };
    assert.equal(doc.kind, "TeardownPlan");
    assert.equal(doc.complete, true);
    assert.deepEqual(doc.waves, [["g/vms/default/vm-0"], ["g/subnets/default/subnet-0"], ["g/vpcs/default/vpc-0"]]);
    assert.deepEqual(doc.objects.find((o) => o.name === "vpc-0")?.blockedBy, [
      "g/subnets/default/subnet-0",
      "g/vms/default/vm-0",
    ]);
    assert.deepEqual(
      doc.finalizerHolds.map((h) => h.id),
      ["g/vms/default/vm-0"],
    );
  });

  it("--plan dry-runs only the types a rule protects: fewer requests, the same waves and edges", async () => {
    const ws = new FakeWorkspace(new SteppingClock());
    chain(ws, 3);
    let dryRuns = 0;
    const dry = ws.dryRun.bind(ws);
    ws.dryRun = (o) => (dryRuns++, dry(o));
    const all = await survey(ws, await ws.list(), 4);
    assert.equal(dryRuns, 9);
    dryRuns = 0;
    const some = await survey(ws, await ws.list(), 4, new Set(["subnets.g", "vpcs.g"]));
    assert.equal(dryRuns, 6, "the VMs, which no rule protects, are not dry-run");
    assert.equal(some.dryRuns, 6);
    assert.deepEqual(some.plan.waves, all.plan.waves);
    assert.deepEqual(some.plan.edges, all.plan.edges);
    dryRuns = 0;
    const none = await survey(ws, await ws.list(), 4, new Set());
    assert.equal(dryRuns, 0);
    assert.deepEqual(none.plan.waves, [all.plan.waves.flat().sort()]);
  });

  it("a dry run without an answer is asked once more; two failures make the object stuck, not the plan fail", async () => {
    const ws = new FakeWorkspace(new SteppingClock());
    chain(ws, 1);
    const dryRun = ws.dryRun.bind(ws);
    const failures = new Map<string, number>();
    ws.dryRun = (o) => {
      const n = failures.get(o.id) ?? 0;
      failures.set(o.id, n + 1);
      if (o.resource === "subnets" && n === 0) return Promise.reject(new Error("no answer within 30000 ms"));
      if (o.resource === "vpcs") return Promise.reject(new Error("socket hang up"));
      return dryRun(o);
    };
    const { plan } = await survey(ws, await ws.list(), 4);
    assert.deepEqual(plan.waves, [["g/vms/default/vm-0"], ["g/subnets/default/subnet-0"]]);
    assert.equal(plan.stuck.length, 1);
    assert.equal(plan.stuck[0]!.reason, "refused");
    assert.match(plan.stuck[0]!.detail, /no answer to a dry-run DELETE: socket hang up/);
  });
});

/** A DependencyRule as read from a workspace: `deps` are the `<group>/<resource>` types its dependent names. */
function ruleObject(name: string, deps: string[]): Record<string, unknown> {
  return {
    metadata: { name, annotations: { "kcp.io/cluster": "lc-p" } },
    spec: {
      dependent: { apiExportName: "c", group: "c", version: "v1", kind: "VM", resource: "vms" },
      dependencies: deps.map((d) => ({
        apiExportRef: { path: "root:p", name: "n" },
        group: d.split("/")[0],
        version: "v1",
        resource: d.split("/")[1],
        fieldRef: { path: ".spec.ref" },
      })),
    },
  };
}

function scanOf(objects: Record<string, unknown>[], skipped: string[] = []) {
  const rules = objects.map((o) => parseRule(o)).filter((r): r is ParsedRule => r !== undefined);
  return {
    rules: rules.map((rule) => ({ workspace: "root:p", rule })),
    objects: objects.map((object) => ({ workspace: "root:p", object })),
    skipped,
  };
}

describe("the types protection can refuse", () => {
  it("are every valid dependency of every rule read", () => {
    const scan = scanOf([ruleObject("a", ["n/vpcs", "n/subnets"]), ruleObject("b", ["n/vpcs", "s/disks"])]);
    assert.deepEqual([...protectedTypes(scan)!].sort(), ["disks.s", "subnets.n", "vpcs.n"]);
    assert.deepEqual([...protectedTypes(scanOf([]))!], [], "no rule anywhere: nothing to dry-run");
  });

  it("are unknown when a workspace could not be read or a rule not parsed: then every type is dry-run", () => {
    assert.equal(
      protectedTypes(scanOf([ruleObject("a", ["n/vpcs"])], ["you may not list the workspaces in root"])),
      undefined,
    );
    assert.equal(protectedTypes(scanOf([ruleObject("a", ["n/vpcs"]), { metadata: {} }])), undefined);
  });
});
