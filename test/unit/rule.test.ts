// Reading rules as kcp serves them: whatever the object holds, parseRule answers and never throws.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseRule } from "../../src/api/rule.ts";
import { DEPENDENCY_RULE_SCHEMA } from "../../src/api/schema.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { validate } from "../../src/api/validate.ts";
import { desiredConfigurations } from "../../src/controller/desired.ts";
import { parseFieldPath } from "../../src/fieldpath/fieldpath.ts";
import { buildRegistry } from "../../src/webhook/rules/registry.ts";
import { ruleObject } from "./helpers-rules.ts";

const parsedPath = (s: string) => {
  const p = parseFieldPath(s);
  if (!p.ok) throw new Error(p.error);
  return p.path;
};

describe("parseRule", () => {
  it("reads a valid rule", () => {
    const r = parseRule(ruleObject("c1", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }], 5));
    assert.deepEqual(r, {
      key: { cluster: "c1", name: "vm" },
      generation: 5,
      dependent: {
        apiExportName: "compute.test.io",
        group: "compute.test.io",
        version: "v1",
        resource: "virtualmachines",
        kind: "VirtualMachine",
      },
      dependencies: [
        {
          index: 0,
          path: "root:network-provider",
          exportName: "network.test.io",
          target: { group: "network.test.io", version: "v1", resource: "vpcs" },
          fieldPath: parsedPath(".spec.vpcRef.name"),
        },
      ],
      localDependencies: [],
      dependencyCount: 1,
      enforcement: "Deny",
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
      `spec.dependencies[2].apiExportRef.path: Invalid value: "Root": should match '^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*){0,9}$'`,
    ]);
  });

  it("refuses a provider path deeper than 10 segments by its depth, and uses the rest of the rule", () => {
    const obj = ruleObject("c1", "vm", { resource: "virtualmachines" }, [
      { resource: "vpcs", path: `root${":a".repeat(124)}` },
      { resource: "subnets", path: `root${":a".repeat(9)}` },
    ]);
    const r = parseRule(obj)!;
    assert.deepEqual(r.problems, [
      "spec.dependencies[0].apiExportRef.path: Invalid value: 125 segments: may have at most 10 (root included)",
    ]);
    assert.deepEqual(
      r.dependencies.map((d) => d.path),
      [`root${":a".repeat(9)}`],
    );
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

describe("one rule model for both binaries (property)", () => {
  // Field values drawn from what rule authors write, right and wrong, so both sides of every check are exercised.
  const pick = <T>(...values: T[]) => fc.constantFrom(...values);
  const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 8 });
  const dependency = fc.record(
    {
      apiExportRef: maybe(
        fc.record({
          path: maybe(pick<unknown>("root:network", "root:a:b", "Root", "root:", "", 7)),
          name: maybe(pick<unknown>("network.test.io", "Net", "")),
        }),
      ),
      group: maybe(pick<unknown>("network.test.io", "compute.test.io", "", "UPPER.io", null)),
      version: maybe(pick<unknown>("v1", "v1beta1", "v0", "1", "")),
      resource: maybe(pick<unknown>("vpcs", "virtualmachines", "VPCs", "vpcs/status", "", "secrets")),
      fieldRef: maybe(
        fc.record({
          path: maybe(
            pick<unknown>(
              ".spec.vpcRef.name",
              ".metadata.name",
              "metadata.name",
              ".spec.nics[*].subnetRef.name",
              ".spec..name",
              ".name",
              ".spec.nics[01].x",
              "",
            ),
          ),
        }),
      ),
    },
    { requiredKeys: [] },
  );
  const dependent = fc.record(
    {
      apiExportName: maybe(pick<unknown>("compute.test.io", "Compute", "")),
      group: maybe(pick<unknown>("compute.test.io", "network.test.io", "-x")),
      version: maybe(pick<unknown>("v1", "v2alpha3", "v1alpha")),
      kind: maybe(pick<unknown>("VirtualMachine", "VPC", "virtualMachine", "")),
      resource: maybe(pick<unknown>("virtualmachines", "vpcs", "../../secrets")),
    },
    { requiredKeys: [] },
  );
  const validDependency = {
    apiExportRef: { path: "root:network", name: "network.test.io" },
    group: "network.test.io",
    version: "v1",
    resource: "vpcs",
    fieldRef: { path: ".spec.vpcRef.name" },
  };
  // Mostly valid lists (a long one over the cap, too) with a few generated entries mixed in.
  const dependencies = fc.oneof(
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(validDependency) },
        { weight: 1, arbitrary: fc.constant({ ...validDependency, fieldRef: { path: ".metadata.name" } }) },
        { weight: 1, arbitrary: dependency },
      ),
      {
        maxLength: 4,
      },
    ),
    fc.integer({ min: 31, max: 34 }).map((n) => Array.from({ length: n }, () => validDependency)),
    fc.constant("x"),
  );
  const ruleObj = fc.record({
    metadata: fc.constant({ name: "r", generation: 1, annotations: { "kcp.io/cluster": "c1" } }),
    spec: fc.record(
      {
        dependent: fc.oneof(
          fc.constant({
            apiExportName: "compute.test.io",
            group: "compute.test.io",
            version: "v1",
            kind: "VirtualMachine",
            resource: "virtualmachines",
          }),
          // The dependent is the protected type itself: only a .metadata.name path makes that self-referencing.
          fc.constant({
            apiExportName: "network.test.io",
            group: "network.test.io",
            version: "v1",
            kind: "VPC",
            resource: "vpcs",
          }),
          dependent,
        ),
        dependencies,
        enforcement: fc.constantFrom<unknown>("Deny", "Warn", "deny", 3),
      },
      { requiredKeys: [] },
    ),
  });
  const clean = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
  const selfReferencing = (obj: unknown): boolean => {
    type Dep = { group?: unknown; resource?: unknown; fieldRef?: { path?: unknown } } | null;
    const spec = (obj as { spec?: { dependent?: { group?: unknown; resource?: unknown }; dependencies?: unknown } })
      .spec;
    const deps = Array.isArray(spec?.dependencies) ? (spec.dependencies as Dep[]) : [];
    return deps.some(
      (d) =>
        d?.group === spec?.dependent?.group &&
        d?.resource === spec?.dependent?.resource &&
        (d?.fieldRef?.path === ".metadata.name" || d?.fieldRef?.path === "metadata.name"),
    );
  };

  // A dependency without apiExportRef must be a local target (core group, secrets or configmaps, v1), and the core
  // group needs one to be left out: checks the schema cannot express, so the oracle states them on its own.
  const localMisfit = (obj: unknown): boolean => {
    type Dep = { apiExportRef?: unknown; group?: unknown; version?: unknown; resource?: unknown } | null;
    const deps = (obj as { spec?: { dependencies?: unknown } }).spec?.dependencies;
    return (Array.isArray(deps) ? (deps as Dep[]) : []).some((d) =>
      d?.apiExportRef === undefined
        ? !(d?.group === "" && (d.resource === "secrets" || d.resource === "configmaps") && d.version === "v1")
        : d.group === "",
    );
  };

  it("a rule has no problems exactly when kcp's schema accepts it, it cannot block its own objects and its local targets are core types", () => {
    fc.assert(
      fc.property(ruleObj, (raw) => {
        const obj = clean(raw);
        const schemaOk = validate(DEPENDENCY_RULE_SCHEMA, obj).length === 0;
        const rule = parseRule(obj)!;
        assert.equal(
          rule.problems.length === 0,
          schemaOk && !selfReferencing(obj) && !localMisfit(obj),
          rule.problems.join("; "),
        );
      }),
      { numRuns: 5000 },
    );
  });

  it("the webhook registers exactly the dependencies the controller installs", () => {
    const resolutions = new Map([
      ["root:network", { ok: true as const, cluster: logicalClusterName("net") }],
      ["root:a:b", { ok: true as const, cluster: logicalClusterName("ab") }],
    ]);
    fc.assert(
      fc.property(ruleObj, (raw) => {
        const obj = clean(raw);
        const installed = desiredConfigurations({
          rules: [parseRule(obj)!],
          resolutions,
          webhookBaseUrl: "https://wh",
        }).configurations;
        const fromController = [...installed].flatMap(([cluster, vwc]) =>
          (vwc.webhooks?.[0]?.rules ?? []).map((r) => `${cluster}|${r.apiGroups[0]}/${r.resources[0]}`),
        );
        const registry = buildRegistry([obj], resolutions);
        const fromWebhook = ["net", "ab"].flatMap((cluster) =>
          ["network.test.io", "compute.test.io"].flatMap((group) =>
            ["vpcs", "virtualmachines"].flatMap((resource) =>
              registry.find(logicalClusterName(cluster), { group, resource }).entries.length > 0
                ? [`${cluster}|${group}/${resource}`]
                : [],
            ),
          ),
        );
        assert.deepEqual(new Set(fromWebhook), new Set(fromController));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parseRule: local targets (a dependency without apiExportRef)", () => {
  const secretRule = (deps: Parameters<typeof ruleObject>[3]) =>
    parseRule(ruleObject("c1", "endpoints", { group: "arc.test.io", resource: "endpoints", kind: "Endpoint" }, deps))!;

  it("reads a Secret and a ConfigMap of the consumer workspace as local targets, beside an export dependency", () => {
    const r = secretRule([
      { resource: "secrets", local: true, fieldPath: ".spec.secretRef.name" },
      { resource: "configmaps", local: true, fieldPath: ".spec.configRef.name" },
      { resource: "vpcs" },
    ]);
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.localDependencies.map((d) => [d.index, d.target, d.fieldPath.source]),
      [
        [0, { group: "", version: "v1", resource: "secrets" }, ".spec.secretRef.name"],
        [1, { group: "", version: "v1", resource: "configmaps" }, ".spec.configRef.name"],
      ],
    );
    assert.deepEqual(
      r.dependencies.map((d) => d.index),
      [2],
    );
    assert.equal(r.dependencyCount, 3);
  });

  it("refuses other types without apiExportRef, naming what is allowed", () => {
    for (const bad of [
      { resource: "pods", local: true },
      { resource: "secrets", group: "network.test.io", local: true },
    ]) {
      const r = secretRule([bad]);
      assert.deepEqual(r.localDependencies, []);
      assert.match(
        r.problems.join("\n"),
        /^spec\.dependencies\[0\]\.apiExportRef: Required value: only a type of the consumer workspace itself may leave it out, and those are group "" with resource configmaps or secrets; got group/,
      );
    }
  });

  it("refuses a version other than v1 and the core group with an apiExportRef", () => {
    assert.match(
      secretRule([{ resource: "secrets", local: true, version: "v2" }]).problems.join(),
      /spec\.dependencies\[0\]\.version: Unsupported value: "v2": secrets are served at v1/,
    );
    const withRef = secretRule([{ resource: "secrets", group: "", exportName: "core.test.io" }]);
    assert.deepEqual([withRef.dependencies, withRef.localDependencies], [[], []]);
    assert.match(withRef.problems.join(), /spec\.dependencies\[0\]\.group: Invalid value: "": the core group is only/);
  });

  it("installs nothing of a local target when the dependent is unusable", () => {
    const obj = ruleObject("c1", "x", { resource: "endpoints" }, [{ resource: "secrets", local: true }]);
    (obj["spec"] as { dependent: { kind: string } }).dependent.kind = "not a kind";
    assert.deepEqual(parseRule(obj)!.localDependencies, []);
  });
});
