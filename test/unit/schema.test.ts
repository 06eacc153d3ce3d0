// The schema's validation, with the original's valid and invalid samples, checked through the same
// validator the controller applies to rules it reads. The integration test checks that kcp refuses the same input.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { DEPENDENCY_RULE_SCHEMA, type JSONSchemaProps } from "../../src/api/schema.ts";
import { validate } from "../../src/api/validate.ts";

function validRule(): Record<string, unknown> {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "vm-dependencies" },
    spec: {
      dependent: {
        apiExportName: "compute.test.io",
        group: "compute.test.io",
        version: "v1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
      },
      dependencies: [
        {
          apiExportRef: { path: "root:network-provider", name: "network.test.io" },
          group: "network.test.io",
          version: "v1",
          resource: "vpcs",
          fieldRef: { path: ".spec.vpcRef.name" },
        },
      ],
    },
  };
}

/** Sets `value` at a dotted path (numeric segments index arrays) in a fresh valid rule. */
function ruleWith(path: string, value: unknown): Record<string, unknown> {
  const rule = validRule();
  const keys = path.split(".");
  let at = rule;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete at[last];
  else at[last] = value;
  return rule;
}

function errorsAt(path: string, value: unknown): string[] {
  return validate(DEPENDENCY_RULE_SCHEMA, ruleWith(path, value)).map((e) => `${e.field}: ${e.message}`);
}

const DNS_VALID = ["a", "compute.test.io", "a-b.c-d", "x1.y2"];
const DNS_INVALID = ["", "Compute.io", "-a", "a-", "a..b", "a_b", ".a", "a.", "a".repeat(254)];

const cases: { field: string; valid: string[]; invalid: string[] }[] = [
  { field: "spec.dependent.apiExportName", valid: DNS_VALID, invalid: DNS_INVALID },
  { field: "spec.dependent.group", valid: DNS_VALID, invalid: DNS_INVALID },
  {
    field: "spec.dependent.version",
    valid: ["v1", "v1alpha1", "v2beta3", "v10"],
    invalid: ["", "v0", "v01", "v1.0", "v1alpha", "v1alpha0", "V1", "1", `v${"1".repeat(63)}`],
  },
  {
    field: "spec.dependent.kind",
    valid: ["VirtualMachine", "V", "VPC2"],
    invalid: ["", "virtualMachine", "Virtual-Machine", "1VM", "Virtual Machine", `V${"a".repeat(63)}`],
  },
  {
    field: "spec.dependent.resource",
    valid: ["virtualmachines", "v1pcs", "a"],
    invalid: ["", "virtual-machines", "vpcs.net", "Vpcs", "1vpcs", "a".repeat(64)],
  },
  {
    field: "spec.dependencies.0.apiExportRef.path",
    valid: ["root", "root:network-provider", "root:org-1:team-2", `root${":a".repeat(9)}`],
    invalid: [
      ...["", "root:", "::", "Root", "root:org_1", ":root", "root::a", "1root", "a".repeat(254)],
      // Deeper than the cap (10 segments); the original allowed up to 125 within 253 characters.
      `root${":a".repeat(10)}`,
      `root${":a".repeat(124)}`,
    ],
  },
  { field: "spec.dependencies.0.apiExportRef.name", valid: DNS_VALID, invalid: DNS_INVALID },
  // Widened by one value: "" (the core group) names a local target; the rule model allows it only without apiExportRef.
  {
    field: "spec.dependencies.0.group",
    valid: [...DNS_VALID, ""],
    invalid: DNS_INVALID.filter((v) => v !== ""),
  },
  {
    field: "spec.dependencies.0.version",
    valid: ["v1", "v1alpha1", "v2beta3"],
    invalid: ["v0", "v01", "v1.0", "v1alpha", "v1alpha0"],
  },
  {
    field: "spec.dependencies.0.resource",
    valid: ["vpcs", "subnets"],
    invalid: ["", "sub-nets", "vpcs.network", "VPCs"],
  },
  {
    field: "spec.dependencies.0.fieldRef.path",
    valid: [
      ".spec.vpcRef.name",
      "spec.vpcRef.name",
      "a.b",
      "._a._b",
      ".spec.nics[*].subnetRef.name",
      ".spec.nics[0].name",
      ".spec.nics[12][*].name",
    ],
    invalid: [
      "",
      ".",
      "a",
      ".spec",
      ".spec.vpc-ref",
      ".spec. name",
      ".spec..name",
      "..spec.name",
      ".spec.nics[01].name",
      ".spec.nics[].name",
      ".spec.nics[-1].name",
      "[0].name",
      ".spec.*.name",
      `.spec.${"a".repeat(250)}`,
    ],
  },
];

describe("DependencyRule schema", () => {
  it("accepts the getting-started example", () => {
    assert.deepEqual(validate(DEPENDENCY_RULE_SCHEMA, validRule()), []);
  });

  for (const c of cases) {
    const field = c.field.replace(/\.(\d+)\./g, "[$1].");
    describe(field, () => {
      for (const v of c.valid) it(`accepts ${JSON.stringify(v)}`, () => assert.deepEqual(errorsAt(c.field, v), []));
      for (const v of c.invalid) {
        it(`refuses ${JSON.stringify(v.length > 40 ? `${v.slice(0, 20)}…(${v.length})` : v)}`, () => {
          const errors = errorsAt(c.field, v);
          assert.ok(errors.length > 0, `expected an error for ${JSON.stringify(v)}`);
          assert.ok(
            errors.every((e) => e.startsWith(`${field}: `)),
            errors.join("\n"),
          );
        });
      }
      it("is required", () => assert.deepEqual(errorsAt(c.field, undefined), [`${field}: Required value`]));
    });
  }

  // The original's exact strings, written out rather than imported, so a changed constant fails here.
  const DNS = "^[a-z]([-a-z0-9]*[a-z0-9])?(\\.[a-z]([-a-z0-9]*[a-z0-9])?)*$";
  const VERSION = "^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$";
  const RESOURCE = "^[a-z][a-z0-9]*$";
  const original: [string, string, number, number][] = [
    ["spec.dependent.apiExportName", DNS, 1, 253],
    ["spec.dependent.group", DNS, 1, 253],
    ["spec.dependent.version", VERSION, 1, 63],
    ["spec.dependent.kind", "^[A-Z][A-Za-z0-9]*$", 1, 63],
    ["spec.dependent.resource", RESOURCE, 1, 63],
    ["spec.dependencies.apiExportRef.name", DNS, 1, 253],
    ["spec.dependencies.version", VERSION, 1, 63],
    ["spec.dependencies.resource", RESOURCE, 1, 63],
  ];
  const at = (path: string): JSONSchemaProps => {
    let s: JSONSchemaProps = DEPENDENCY_RULE_SCHEMA;
    for (const k of path.split("."))
      s = s.properties?.[k] ?? s.items?.properties?.[k] ?? assert.fail(`no ${k} in ${path}`);
    return s;
  };
  for (const [path, pattern, min, max] of original) {
    it(`${path} has the original's pattern and lengths`, () => {
      const s = at(path);
      assert.deepEqual([s.type, s.pattern, s.minLength, s.maxLength], ["string", pattern, min, max]);
    });
  }
  it("apiExportRef.path keeps the original's lengths and accepts every path of the original's up to 10 segments", () => {
    const s = at("spec.dependencies.apiExportRef.path");
    assert.deepEqual([s.minLength, s.maxLength], [1, 253]);
    const originalPath = /^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)*$/;
    const accepts = (p: string): boolean => new RegExp(s.pattern!).test(p);
    fc.assert(fc.property(fc.stringMatching(originalPath), (p) => accepts(p) === p.split(":").length <= 10));
  });
  it("fieldRef.path keeps the original's lengths and accepts every path the original's pattern accepted", () => {
    const s = at("spec.dependencies.fieldRef.path");
    assert.deepEqual([s.minLength, s.maxLength], [2, 253]);
    const originalPattern = /^\.?[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)+$/;
    fc.assert(fc.property(fc.stringMatching(originalPattern), (p) => p.length > 253 || new RegExp(s.pattern!).test(p)));
  });
  it("spec.dependencies.group accepts exactly the original's values and the empty core group", () => {
    const s = at("spec.dependencies.group");
    assert.deepEqual([s.minLength, s.maxLength], [0, 253]);
    const accepts = (g: string): boolean => new RegExp(s.pattern!).test(g);
    fc.assert(fc.property(fc.string({ maxLength: 20 }), (g) => accepts(g) === (g === "" || new RegExp(DNS).test(g))));
  });
  it("requires the same fields as the original, but apiExportRef (left out only by a local target)", () => {
    assert.deepEqual(at("spec").required, ["dependencies", "dependent"]);
    assert.deepEqual(at("spec.dependent").required, ["apiExportName", "group", "kind", "resource", "version"]);
    assert.deepEqual(at("spec.dependencies").items?.required, ["fieldRef", "group", "resource", "version"]);
    assert.deepEqual(at("spec.dependencies.apiExportRef").required, ["name", "path"]);
    assert.deepEqual(DEPENDENCY_RULE_SCHEMA.required, ["spec"]);
  });

  it("refuses an empty dependencies list (the original allowed it)", () => {
    assert.deepEqual(errorsAt("spec.dependencies", []), [
      "spec.dependencies: Invalid value: 0: should have at least 1 items",
    ]);
  });

  it("refuses a rule without spec, and a dependency without fieldRef", () => {
    assert.deepEqual(errorsAt("spec", undefined), ["spec: Required value"]);
    assert.deepEqual(errorsAt("spec.dependencies.0.fieldRef", undefined), [
      "spec.dependencies[0].fieldRef: Required value",
    ]);
  });

  it("accepts a status written by the controller and refuses an unknown condition status", () => {
    const status = {
      observedGeneration: 2,
      dependencyCount: 1,
      conditions: [
        { type: "Ready", status: "True", reason: "Ready", message: "ok", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
    };
    assert.deepEqual(validate(DEPENDENCY_RULE_SCHEMA, { ...validRule(), status }), []);
    const bad = { ...status, conditions: [{ ...status.conditions[0], status: "Maybe" }] };
    assert.equal(validate(DEPENDENCY_RULE_SCHEMA, { ...validRule(), status: bad }).length, 1);
  });
});
