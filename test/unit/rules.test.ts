// Reading rules as kcp serves them: whatever the object holds, parseRule answers and never throws.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseRule } from "../../src/controller/rules.ts";
import { ruleObject } from "./helpers-rules.ts";

describe("parseRule", () => {
  it("reads a valid rule", () => {
    const r = parseRule(ruleObject("c1", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }], 5));
    assert.deepEqual(r, {
      key: { cluster: "c1", name: "vm" },
      generation: 5,
      dependent: { group: "compute.test.io", resource: "virtualmachines", kind: "VirtualMachine" },
      dependencies: [
        {
          index: 0,
          path: "root:network-provider",
          target: { group: "network.test.io", version: "v1", resource: "vpcs" },
        },
      ],
      dependencyCount: 1,
      problems: [],
    });
  });

  it("cannot key an object without name or kcp.io/cluster annotation", () => {
    assert.equal(parseRule({ metadata: { name: "x" } }), undefined);
    assert.equal(parseRule({ metadata: { annotations: { "kcp.io/cluster": "c" } } }), undefined);
    assert.equal(parseRule(null), undefined);
  });

  it("reports an empty dependencies list (stored under the original's schema)", () => {
    const obj = ruleObject("c1", "vm", { resource: "virtualmachines" }, []);
    assert.deepEqual(parseRule(obj)?.problems, ["spec.dependencies: Invalid value: 0: should have at least 1 items"]);
  });

  it("reports every problem with its field, and keeps the valid dependencies", () => {
    const obj = ruleObject("c1", "vm", { resource: "virtualmachines" }, [
      { resource: "vpcs", version: "v0" },
      { resource: "subnets" },
      { resource: "nics", path: "Root" },
    ]);
    const r = parseRule(obj)!;
    assert.deepEqual(
      r.dependencies.map((d) => d.index),
      [1],
    );
    assert.deepEqual(r.problems, [
      `spec.dependencies[0].version: Invalid value: "v0": should match '^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$'`,
      `spec.dependencies[2].apiExportRef.path: Invalid value: "Root": should match '^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)*$'`,
    ]);
  });

  it("never throws, whatever the object holds (property)", () => {
    const withCluster = fc.record({
      metadata: fc.record({ name: fc.string(), annotations: fc.constant({ "kcp.io/cluster": "c" }) }),
      spec: fc.anything(),
    });
    const specLike = fc.record({
      metadata: fc.constant({ name: "n", annotations: { "kcp.io/cluster": "c" } }),
      spec: fc.record(
        { dependent: fc.anything(), dependencies: fc.oneof(fc.anything(), fc.array(fc.anything())) },
        { requiredKeys: [] },
      ),
    });
    fc.assert(
      fc.property(fc.oneof(fc.anything(), withCluster, specLike), (obj) => {
        const r = parseRule(obj);
        if (r) assert.ok(r.problems.length > 0 || r.dependencies.length > 0);
      }),
      { numRuns: 2000 },
    );
  });
});
