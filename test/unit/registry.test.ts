import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConditionType, DependencyRule } from "../../src/api/types.ts";
import type { Verdicts } from "../../src/api/verdicts.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import {
  buildRegistry,
  formatProblem,
  notEnforcedCount,
  rulePaths,
  type RuleMatch,
} from "../../src/webhook/rules/registry.ts";

const lc = (s: string) => logicalClusterName(s);

interface Dep {
  path?: string;
  group?: string;
  resource?: string;
  field?: string;
}

function rule(cluster: string | undefined, name: string, deps: Dep[], dependent: Record<string, unknown> = {}) {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name, ...(cluster ? { annotations: { "kcp.io/cluster": cluster } } : {}) },
    spec: {
      dependent: {
        apiExportName: "compute",
        group: "compute.example.io",
        version: "v1",
        kind: "VirtualMachine",
        resource: "virtualmachines",
        ...dependent,
      },
      dependencies: deps.map((d) => ({
        apiExportRef: { path: d.path ?? "root:network", name: "network" },
        group: d.group ?? "network.example.io",
        version: "v1",
        resource: d.resource ?? "vpcs",
        fieldRef: { path: d.field ?? ".spec.vpcRef.name" },
      })),
    },
  } as DependencyRule;
}

const resolved = (entries: Record<string, string | { reason: string; transient?: boolean }>): Map<string, Resolution> =>
  new Map(
    Object.entries(entries).map(([path, r]) => [
      path,
      typeof r === "string"
        ? { ok: true, cluster: lc(r) }
        : { ok: false, reason: r.reason, ...(r.transient ? { transient: true } : {}) },
    ]),
  );

const VPCS = { group: "network.example.io", resource: "vpcs" };

/** The rule at `generation`, and the controller's verdict on it holding one condition (src/api/verdicts.ts). */
function withVerdict(
  r: DependencyRule,
  generation: number,
  condition: { type: ConditionType; reason: string; observedGeneration: number },
): { rule: DependencyRule; verdicts: Verdicts } {
  const o = r as unknown as Record<string, unknown>;
  (o["metadata"] as Record<string, unknown>)["generation"] = generation;
  const key = `${r.metadata.annotations?.["kcp.io/cluster"]}/${r.metadata.name}`;
  const remembered = { status: "False" as const, reason: condition.reason, since: "2026-01-01T00:00:00Z" };
  const verdict = { generation: condition.observedGeneration, conditions: { [condition.type]: remembered } };
  return { rule: r, verdicts: { rules: new Map([[key, verdict]]), paths: new Map() } };
}

/** The same condition forged onto the rule's own status (what its author can write): it must count for nothing. */
function withForgedStatus(r: DependencyRule, generation: number, condition: Record<string, unknown>): DependencyRule {
  const o = r as unknown as Record<string, unknown>;
  (o["metadata"] as Record<string, unknown>)["generation"] = generation;
  o["status"] = { conditions: [{ status: "False", lastTransitionTime: "2099-01-01T00:00:00Z", ...condition }] };
  return r;
}
/** A match reduced to plain data: rule keys and field path sources. */
const summary = (m: RuleMatch) => ({
  entries: m.entries.map((e) => [e.rule, e.dependent.resource, e.fieldPaths.map((p) => p.source)]),
});

describe("buildRegistry", () => {
  const paths = resolved({ "root:network": "net1", "root:other-network": "net2" });

  it("finds a rule by provider logical cluster and protected group/resource", () => {
    const reg = buildRegistry([rule("c1", "vm-rule", [{}])], paths);
    assert.deepEqual(summary(reg.find(lc("net1"), VPCS)), {
      entries: [["c1/vm-rule", "virtualmachines", [".spec.vpcRef.name"]]],
    });
    assert.equal(reg.ruleCount, 1);
    assert.equal(reg.entryCount, 1);
    assert.deepEqual(reg.problems, []);
  });

  it("two providers exporting the same group/resource never cross-trigger", () => {
    const reg = buildRegistry(
      [rule("c1", "uses-net1", [{ path: "root:network" }]), rule("c2", "uses-net2", [{ path: "root:other-network" }])],
      paths,
    );
    assert.deepEqual(
      reg.find(lc("net1"), VPCS).entries.map((e) => e.rule),
      ["c1/uses-net1"],
    );
    assert.deepEqual(
      reg.find(lc("net2"), VPCS).entries.map((e) => e.rule),
      ["c2/uses-net2"],
    );
    assert.deepEqual(summary(reg.find(lc("net3"), VPCS)), { entries: [] });
  });

  it("legacy /validate (no provider) matches across all providers", () => {
    const reg = buildRegistry(
      [rule("c2", "uses-net2", [{ path: "root:other-network" }]), rule("c1", "uses-net1", [{ path: "root:network" }])],
      paths,
    );
    assert.deepEqual(
      reg.find(undefined, VPCS).entries.map((e) => e.rule),
      ["c1/uses-net1", "c2/uses-net2"],
    );
  });

  it("does not match another group or resource", () => {
    const reg = buildRegistry([rule("c1", "r", [{}])], paths);
    assert.equal(reg.find(lc("net1"), { group: "network.example.io", resource: "subnets" }).entries.length, 0);
    assert.equal(reg.find(lc("net1"), { group: "other.example.io", resource: "vpcs" }).entries.length, 0);
  });

  it("the same rule name in two workspaces is two rules", () => {
    const reg = buildRegistry([rule("c1", "r", [{}]), rule("c2", "r", [{}])], paths);
    assert.deepEqual(
      reg.find(lc("net1"), VPCS).entries.map((e) => e.rule),
      ["c1/r", "c2/r"],
    );
    assert.equal(reg.ruleCount, 2);
  });

  it("one rule with two fields to the same target is one entry with both paths", () => {
    const reg = buildRegistry(
      [
        rule("c1", "r", [
          { field: ".spec.vpcRef.name" },
          { field: ".spec.nics[*].vpc" },
          { field: ".spec.vpcRef.name" },
        ]),
      ],
      paths,
    );
    assert.deepEqual(summary(reg.find(lc("net1"), VPCS)).entries, [
      ["c1/r", "virtualmachines", [".spec.vpcRef.name", ".spec.nics[*].vpc"]],
    ]);
    assert.equal(reg.entryCount, 1);
  });

  it("a rule protecting two resources is found under each", () => {
    const reg = buildRegistry(
      [rule("c1", "r", [{ resource: "vpcs" }, { resource: "subnets", field: ".spec.subnet" }])],
      paths,
    );
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 1);
    assert.deepEqual(summary(reg.find(lc("net1"), { group: "network.example.io", resource: "subnets" })).entries, [
      ["c1/r", "virtualmachines", [".spec.subnet"]],
    ]);
    assert.equal(reg.entryCount, 2);
  });

  it("a provider path that definitely names no workspace affects nobody, and is a problem of its own rule", () => {
    const reg = buildRegistry(
      [rule("c1", "ok", [{}]), rule("c9", "typo", [{ path: "root:does-not-exist" }])],
      resolved({
        "root:network": "net1",
        "root:does-not-exist": { reason: "workspace root:does-not-exist not found" },
      }),
    );
    assert.deepEqual(summary(reg.find(lc("net1"), VPCS)), {
      entries: [["c1/ok", "virtualmachines", [".spec.vpcRef.name"]]],
    });
    assert.deepEqual(reg.problems.map(formatProblem), [
      "rule c9/typo: spec.dependencies[0] protects nothing: workspace root:does-not-exist not found",
    ]);
  });

  it("a path that never resolved (403, kcp unreachable) is not enforced: nobody else's delete waits for it", () => {
    const reg = buildRegistry(
      [rule("c1", "ok", [{}]), rule("c9", "flaky", [{ path: "root:far" }])],
      resolved({
        "root:network": "net1",
        "root:far": { reason: "not allowed to read workspace root:far", transient: true },
      }),
    );
    // The other provider's rule is found as before; the faulty rule appears nowhere, under no provider.
    assert.deepEqual(summary(reg.find(lc("net1"), VPCS)), {
      entries: [["c1/ok", "virtualmachines", [".spec.vpcRef.name"]]],
    });
    assert.deepEqual(
      reg.find(undefined, VPCS).entries.map((e) => e.rule),
      ["c1/ok"],
    );
    assert.deepEqual(reg.problems.map(formatProblem), [
      "rule c9/flaky: not enforced: spec.dependencies[0] has never resolved: not allowed to read workspace root:far",
    ]);
    assert.equal(notEnforcedCount(reg), 1);
    assert.equal(reg.ruleCount, 1);
  });

  it("a path not resolved yet is not enforced either", () => {
    const reg = buildRegistry([rule("c1", "r", [{ path: "root:new" }])], new Map());
    assert.deepEqual(reg.find(undefined, VPCS).entries, []);
    assert.deepEqual(reg.problems.map(formatProblem), [
      "rule c1/r: not enforced: spec.dependencies[0] has never resolved: workspace root:new not resolved yet",
    ]);
  });

  it("a rule whose author declined the read-only claims is not enforced, unless the operator opts it in", () => {
    const declined = (generation: number, observedGeneration: number) =>
      withVerdict(rule("c1", "r", [{}]), generation, {
        type: "ReferencesValid",
        reason: "ChecksDeclined",
        observedGeneration,
      });
    const entries = (v: ReturnType<typeof declined>, enforceUnverified = false) =>
      buildRegistry([v.rule], paths, { verdicts: v.verdicts, enforceUnverified }).find(lc("net1"), VPCS).entries;
    const d = declined(1, 1);
    const reg = buildRegistry([d.rule], paths, { verdicts: d.verdicts });
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 0);
    assert.equal(notEnforcedCount(reg), 1);
    assert.match(formatProblem(reg.problems[0]!), /not enforced: its author declined the read-only claims/);
    assert.equal(entries(declined(1, 1), true).length, 1);
    // A verdict on an older generation says nothing about the rule as it is now.
    assert.equal(entries(declined(2, 1)).length, 1);
  });

  it("the DependentsIndexed verdict travels with each entry, for when the index cannot answer", () => {
    const trust = (reason: string) => {
      const v = withVerdict(rule("c1", "r", [{}]), 1, { type: "DependentsIndexed", reason, observedGeneration: 1 });
      return buildRegistry([v.rule], paths, { verdicts: v.verdicts }).find(lc("net1"), VPCS).entries[0]?.index;
    };
    assert.equal(trust("Indexed"), "protected");
    assert.equal(trust("IndexRevoked"), "protected");
    assert.equal(trust("IndexLost"), "protected");
    assert.equal(trust("IndexForbidden"), "not-enforced");
    assert.equal(trust("IndexRevocationExpired"), "not-enforced");
    assert.equal(trust("IndexSyncing"), "unknown");
    assert.equal(buildRegistry([rule("c1", "r", [{}])], paths).find(lc("net1"), VPCS).entries[0]?.index, "unknown");
  });

  it("a verdict on an earlier rule object of the same name does not count", () => {
    const v = withVerdict(rule("c1", "r", [{}]), 1, {
      type: "ReferencesValid",
      reason: "DependentInvalid",
      observedGeneration: 1,
    });
    const verdict = { ...v.verdicts.rules.get("c1/r")!, uid: "old-uid" };
    (v.rule.metadata as { uid?: string }).uid = "new-uid";
    const verdicts = { rules: new Map([["c1/r", verdict]]), paths: new Map() };
    assert.equal(buildRegistry([v.rule], paths, { verdicts }).find(lc("net1"), VPCS).entries.length, 1);
  });

  it("nothing on a rule's own status counts: an author's forged conditions change no decision", () => {
    const reasons: [string, string][] = [
      ["ReferencesValid", "DependentInvalid"],
      ["ReferencesValid", "ChecksDeclined"],
      ...["Indexed", "LiveLookup", "IndexRevoked", "IndexLost", "IndexResyncing", "IndexForbidden"].map(
        (r): [string, string] => ["DependentsIndexed", r],
      ),
    ];
    for (const [type, reason] of reasons) {
      const forged = withForgedStatus(rule("c1", "r", [{}]), 1, { type, reason, observedGeneration: 1 });
      const entries = buildRegistry([forged], paths).find(lc("net1"), VPCS).entries;
      assert.equal(entries.length, 1, `${type}=${reason} on the status left the rule enforced`);
      assert.equal(entries[0]!.index, "unknown", `${type}=${reason} on the status is no index verdict`);
    }
  });

  it("a dependency the controller excluded (not served, or not admitted by its provider) gates nothing", () => {
    const r = rule("c1", "r", [{}, { resource: "subnets", field: ".spec.subnet" }]);
    (r.metadata as { generation?: number }).generation = 4;
    const verdicts = (generation: number): Verdicts => ({
      rules: new Map([["c1/r", { generation, conditions: {}, excluded: [0] }]]),
      paths: new Map(),
    });
    const subnets = { group: "network.example.io", resource: "subnets" };
    const reg = buildRegistry([r], paths, { verdicts: verdicts(4) });
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 0, "dependency 0 excluded");
    assert.equal(reg.find(lc("net1"), subnets).entries.length, 1, "dependency 1 kept");
    assert.match(formatProblem(reg.problems[0]!), /not enforced: spec.dependencies\[0\] is not served/);
    // An exclusion judged on an older generation says nothing about the rule as it is now.
    assert.equal(buildRegistry([r], paths, { verdicts: verdicts(3) }).find(lc("net1"), VPCS).entries.length, 1);
  });

  it("a rule whose dependent the controller rejected for this generation is not enforced", () => {
    const rejected = (generation: number, observedGeneration: number) => {
      const v = withVerdict(rule("c1", "r", [{}]), generation, {
        type: "ReferencesValid",
        reason: "DependentInvalid",
        observedGeneration,
      });
      return buildRegistry([v.rule], paths, { verdicts: v.verdicts }).find(lc("net1"), VPCS).entries.length;
    };
    assert.equal(rejected(2, 2), 0);
    // A verdict on an older generation says nothing about the rule as it is now: enforce until checked again.
    assert.equal(rejected(3, 2), 1);
  });

  it("a malformed field path skips that dependency with a problem, keeps the others", () => {
    const reg = buildRegistry(
      [rule("c1", "r", [{ field: ".spec..name" }, { resource: "subnets", field: ".spec.subnet" }])],
      paths,
    );
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 0);
    assert.equal(reg.find(lc("net1"), { group: "network.example.io", resource: "subnets" }).entries.length, 1);
    assert.deepEqual(reg.problems.map(formatProblem), [
      'rule c1/r: spec.dependencies[0].fieldRef.path: invalid field path ".spec..name": expected a field name (letter or "_"), found "." at position 7',
    ]);
  });

  it("a malformed dependent skips the whole rule", () => {
    const reg = buildRegistry([rule("c1", "r", [{}], { resource: "../../secrets" })], paths);
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 0);
    assert.equal(reg.ruleCount, 0);
    assert.deepEqual(reg.problems.map(formatProblem), [
      `rule c1/r: spec.dependent.resource: Invalid value: "../../secrets": should match '^[a-z][a-z0-9]*$'`,
    ]);
  });

  it("a rule without kcp.io/cluster is skipped with a problem", () => {
    const reg = buildRegistry([rule(undefined, "r", [{}])], paths);
    assert.equal(reg.find(lc("net1"), VPCS).entries.length, 0);
    assert.deepEqual(reg.problems.map(formatProblem), ["rule /r: rule has no name or kcp.io/cluster annotation"]);
  });

  it("garbage specs never throw", () => {
    const garbage = [
      { metadata: { name: "a", annotations: { "kcp.io/cluster": "c" } } },
      { metadata: { name: "b", annotations: { "kcp.io/cluster": "c" } }, spec: { dependent: null, dependencies: 5 } },
      { metadata: { name: "c", annotations: { "kcp.io/cluster": "c" } }, spec: { dependencies: [null, 3, {}] } },
      {
        metadata: { name: "d", annotations: { "kcp.io/cluster": "c" } },
        spec: { dependent: rule("c", "x", []).spec.dependent, dependencies: [null, 3, {}] },
      },
    ] as unknown as DependencyRule[];
    const reg = buildRegistry(garbage, paths);
    assert.equal(reg.ruleCount, 0);
    // Every rule is reported, each with at least one problem.
    assert.deepEqual([...new Set(reg.problems.map((p) => p.rule))].sort(), ["c/a", "c/b", "c/c", "c/d"]);
  });

  it("input order does not change the result", () => {
    const rules = [rule("c3", "a", [{}]), rule("c1", "b", [{}]), rule("c2", "c", [{}])];
    const a = buildRegistry(rules, paths)
      .find(lc("net1"), VPCS)
      .entries.map((e) => e.rule);
    const b = buildRegistry([...rules].reverse(), paths)
      .find(lc("net1"), VPCS)
      .entries.map((e) => e.rule);
    assert.deepEqual(a, ["c1/b", "c2/c", "c3/a"]);
    assert.deepEqual(b, a);
  });
});

describe("rulePaths", () => {
  it("collects distinct provider paths, sorted, ignoring garbage", () => {
    const rules = [
      rule("c1", "a", [{ path: "root:b" }, { path: "root:a" }]),
      rule("c1", "b", [{ path: "root:b" }]),
      {
        metadata: { name: "x" },
        spec: { dependencies: [null, { apiExportRef: { path: 3 } }] },
      } as unknown as DependencyRule,
    ];
    assert.deepEqual(rulePaths(rules), ["root:a", "root:b"]);
  });
});
