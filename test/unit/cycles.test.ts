// Cycle detection over rules: dependent group/resource → dependency group/resource.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { findCycles, type RuleEdges } from "../../src/controller/cycles.ts";

const gr = (s: string): { group: string; resource: string } => {
  const [resource, ...group] = s.split(".");
  return { resource: resource!, group: group.join(".") };
};

function edges(cluster: string, name: string, dependent: string, ...deps: string[]): RuleEdges {
  return {
    key: { cluster: cluster as LogicalClusterName, name },
    dependent: gr(dependent),
    dependencies: deps.map(gr),
  };
}

describe("findCycles", () => {
  it("finds none in a chain", () => {
    const rules = [
      edges("c", "vm", "virtualmachines.compute", "vpcs.net", "subnets.net"),
      edges("n", "subnet", "subnets.net", "vpcs.net"),
    ];
    assert.equal(findCycles(rules).size, 0);
  });

  it("names a two-rule cycle the same way for both rules", () => {
    const rules = [
      edges("c", "vm", "virtualmachines.compute", "vpcs.net"),
      edges("n", "vpc", "vpcs.net", "virtualmachines.compute"),
    ];
    const cycles = findCycles(rules);
    const expected = (own: string) =>
      `dependency cycle virtualmachines.compute → vpcs.net → virtualmachines.compute (rule ${own} of this workspace ` +
      "and 1 rule in other workspaces): objects on it can block each other's deletion; break the cycle or use the " +
      "skip-protection annotation";
    assert.deepEqual(
      [...cycles.entries()],
      [
        ["c/vm", expected("vm")],
        ["n/vpc", expected("vpc")],
      ],
    );
  });

  it("names the shortest cycle through the rule's own edge", () => {
    const rules = [
      edges("x", "ab", "a.g", "b.g"),
      edges("x", "ba", "b.g", "a.g"),
      edges("x", "bc", "b.g", "c.g"),
      edges("x", "ca", "c.g", "a.g"),
    ];
    const cycles = findCycles(rules);
    assert.match(cycles.get("x/ab")!, /cycle a\.g → b\.g → a\.g \(rules ab, ba of this workspace\)/);
    assert.match(cycles.get("x/bc")!, /cycle a\.g → b\.g → c\.g → a\.g \(rules ab, bc, ca of this workspace\)/);
  });

  it("treats the core group and versions as the API server does (group/resource only)", () => {
    const rules = [edges("x", "pods", "pods", "secrets"), edges("x", "secrets", "secrets", "pods")];
    assert.match(findCycles(rules).get("x/pods")!, /cycle pods → secrets → pods/);
  });

  it("does not depend on the order of rules (property)", () => {
    const nodes = ["a.g", "b.g", "c.g", "d.g", "e.g"];
    const arb = fc.uniqueArray(
      fc.record({
        name: fc.stringMatching(/^[a-z]{1,6}$/),
        from: fc.constantFrom(...nodes),
        to: fc.array(fc.constantFrom(...nodes), { maxLength: 3 }),
      }),
      { selector: (r) => r.name, maxLength: 8 },
    );
    fc.assert(
      fc.property(arb, (specs) => {
        const rules = specs.map((s) => edges("x", s.name, s.from, ...s.to));
        const a = findCycles(rules);
        const b = findCycles([...rules].reverse());
        assert.deepEqual(new Map([...a].sort()), new Map([...b].sort()));
        // A rule is reported exactly when one of its edges can be walked back to its dependent.
        for (const s of specs) {
          const reach = (from: string, to: string): boolean => {
            const seen = new Set<string>();
            const stack = [from];
            while (stack.length) {
              const v = stack.pop()!;
              if (v === to) return true;
              if (seen.has(v)) continue;
              seen.add(v);
              for (const r of specs) if (r.from === v) stack.push(...r.to);
            }
            return false;
          };
          assert.equal(
            a.has(`x/${s.name}`),
            s.to.some((t) => reach(t, s.from)),
          );
        }
      }),
    );
  });
});
