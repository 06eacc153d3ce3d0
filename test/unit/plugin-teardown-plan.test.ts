// The teardown planner without kcp: waves of a chain, cycles and what sits behind them, blockers outside the
// teardown, other refusals, skip-protection, finalizer holds; and as a property over random graphs, every edge
// goes from an earlier wave to a later one and every object is either in a wave or named as stuck.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { planTeardown, type BlockEdge, type PlanObject } from "../../src/plugin/commands/teardown/plan.ts";

function obj(name: string, extra: Partial<PlanObject> = {}): PlanObject {
  return {
    id: `g/r/default/${name}`,
    group: "g",
    version: "v1",
    resource: "r",
    kind: "K",
    namespace: "default",
    name,
    finalizers: [],
    deleting: false,
    skipProtection: false,
    ...extra,
  };
}
const id = (name: string): string => `g/r/default/${name}`;
const edge = (from: string, to: string): BlockEdge => ({ from: id(from), to: id(to) });

describe("teardown planner", () => {
  it("a chain VM → Subnet → VPC is three waves, dependents first", () => {
    const p = planTeardown([obj("vpc"), obj("subnet"), obj("vm")], [edge("vm", "subnet"), edge("subnet", "vpc")]);
    assert.deepEqual(p.waves, [[id("vm")], [id("subnet")], [id("vpc")]]);
    assert.deepEqual(p.stuck, []);
    assert.deepEqual(p.cycles, []);
  });

  it("a named object waits for its dependents like the rest; on a cycle it goes in the final waves", () => {
    const ordered = planTeardown([obj("vm"), obj("vpc", { named: true })], [edge("vm", "vpc")]);
    assert.deepEqual(ordered.waves, [[id("vm")], [id("vpc")]]);
    const cycle = planTeardown([obj("a", { named: true }), obj("b"), obj("free")], [edge("a", "b"), edge("b", "a")]);
    assert.deepEqual(cycle.waves, [[id("free")], [id("a")], [id("b")]]);
    assert.deepEqual(cycle.stuck, []);
  });

  it("a cycle is named with its objects, what sits behind it too, and the cycle needs skip-protection", () => {
    const objects = ["a", "b", "c", "free"].map((n) => obj(n));
    const p = planTeardown(objects, [edge("a", "b"), edge("b", "a"), edge("b", "c")]);
    assert.deepEqual(p.waves, [[id("free")]]);
    assert.deepEqual(p.cycles, [[id("a"), id("b")]]);
    assert.deepEqual(p.needsSkipProtection, [id("a"), id("b")]);
    assert.deepEqual(
      p.stuck.map((s) => [s.id, s.reason]),
      [
        [id("a"), "cycle"],
        [id("b"), "cycle"],
        [id("c"), "behind-cycle"],
      ],
    );
  });

  it("skip-protection on one cycle member lets the rest go in order", () => {
    const p = planTeardown([obj("a", { skipProtection: true }), obj("b")], [edge("a", "b"), edge("b", "a")]);
    assert.deepEqual(p.waves, [[id("a")], [id("b")]]);
    assert.deepEqual(p.stuck, []);
  });

  it("blockers outside the teardown and other refusals stop the object and what it blocks", () => {
    const obstacles = new Map([
      [id("vpc"), { outside: ["VirtualMachine/other/vm"] }],
      [id("x"), { refused: "delete refused (403 Forbidden): no" }],
    ]);
    const p = planTeardown([obj("vpc"), obj("x"), obj("y")], [edge("x", "y")], obstacles);
    assert.deepEqual(p.waves, []);
    assert.deepEqual(
      p.stuck.map((s) => [s.id, s.reason]),
      [
        [id("vpc"), "blocked-outside"],
        [id("x"), "refused"],
        [id("y"), "behind-stuck"],
      ],
    );
  });

  it("names objects held by finalizers, and ignores edges to unknown objects and self-references", () => {
    const p = planTeardown(
      [obj("vm", { finalizers: ["backend"], deleting: true }), obj("vpc")],
      [edge("vm", "vpc"), edge("vpc", "vpc"), { from: "nope", to: id("vpc") }],
    );
    assert.deepEqual(p.finalizerHolds, [{ id: id("vm"), finalizers: ["backend"] }]);
    assert.deepEqual(p.waves, [[id("vm")], [id("vpc")]]);
  });

  it("property: every edge from an earlier wave to a later one; every object placed or stuck, once", () => {
    const graph = fc.integer({ min: 1, max: 40 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: n * 2 }),
        skip: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      }),
    );
    fc.assert(
      fc.property(graph, ({ n, edges, skip }) => {
        const objects = Array.from({ length: n }, (_, i) => obj(`o${i}`, { skipProtection: skip[i]! }));
        const p = planTeardown(
          objects,
          edges.map(([a, b]) => edge(`o${a}`, `o${b}`)),
        );
        const wave = new Map(p.waves.flatMap((w, i) => w.map((x) => [x, i] as const)));
        for (const e of p.edges)
          if (wave.has(e.to)) assert.ok((wave.get(e.from) ?? Infinity) < wave.get(e.to)!, `${e.from} → ${e.to}`);
        const all = [...p.waves.flat(), ...p.stuck.map((s) => s.id)].sort();
        assert.deepEqual(all, objects.map((o) => o.id).sort());
        // Without cycles nothing is stuck.
        if (p.cycles.length === 0) assert.deepEqual(p.stuck, []);
      }),
      { numRuns: 300 },
    );
  });

  it("2,000 VM → VPC pairs plan into two waves", () => {
    const objects: PlanObject[] = [];
    const edges: BlockEdge[] = [];
    for (let i = 0; i < 2000; i++) {
      objects.push(obj(`vm-${i}`), obj(`vpc-${i}`));
      edges.push(edge(`vm-${i}`, `vpc-${i}`));
    }
    const p = planTeardown(objects, edges);
    assert.equal(p.waves.length, 2);
    assert.equal(p.waves[0]!.length, 2000);
  });
});
