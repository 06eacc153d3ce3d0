// Rule status: conditions, deterministic messages, lastTransitionTime kept while a condition's status holds.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Condition, LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import { computeStatus, type InstallResult, type RuleFacts, statusChanged } from "../../src/controller/status.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { ruleObject } from "./helpers-rules.ts";

const NET = logicalClusterName("netcluster");
const STORAGE = logicalClusterName("storagecluster");
const T0 = "2026-01-01T00:00:00Z";
const T1 = "2026-01-01T00:05:00Z";

const vmRule = (generation = 3): ParsedRule =>
  parseRule(
    ruleObject(
      "compute",
      "vm",
      { resource: "virtualmachines" },
      [{ resource: "vpcs" }, { resource: "buckets", group: "storage.test.io", path: "root:org:storage" }],
      generation,
    ),
  )!;

function facts(over: Partial<RuleFacts> = {}): RuleFacts {
  return {
    resolutions: new Map<string, Resolution>([
      ["root:network-provider", { ok: true, cluster: NET }],
      ["root:org:storage", { ok: true, cluster: STORAGE }],
    ]),
    installs: new Map<LogicalClusterName, InstallResult>([
      [NET, { ok: true }],
      [STORAGE, { ok: true }],
    ]),
    references: { dependentInvalid: false, invalidDependencies: new Set(), problems: [], unknown: false },
    ...over,
  };
}

const byType = (conds: Condition[] | undefined): Record<string, [string, string, string]> =>
  Object.fromEntries((conds ?? []).map((c) => [c.type, [c.status, c.reason, c.message]]));

const UNRESOLVED =
  "not enforced until it resolves: check the path, and that the controller and webhook may read the workspaces " +
  "along it: deploy/rbac/workspace-resolution.yaml";

describe("computeStatus", () => {
  it("is Ready when resolved, installed and acyclic", () => {
    const s = computeStatus(vmRule(), facts(), undefined, T0);
    assert.equal(s.observedGeneration, 3);
    assert.equal(s.dependencyCount, 2);
    assert.deepEqual(byType(s.conditions), {
      Ready: ["True", "Ready", "deletion protection is installed"],
      ReferencesValid: [
        "True",
        "Valid",
        "the dependent and every dependency are served by the APIExports the rule names",
      ],
      WorkspacesResolved: [
        "True",
        "Resolved",
        `resolved root:network-provider (${NET}), root:org:storage (${STORAGE})`,
      ],
      WebhooksInstalled: ["True", "Installed", "webhook installed in root:network-provider, root:org:storage"],
      Acyclic: ["True", "NoCycle", "no dependency cycle through this rule"],
    });
    assert.deepEqual(
      s.conditions?.map((c) => [c.type, c.observedGeneration, c.lastTransitionTime]),
      [
        ["Ready", 3, T0],
        ["ReferencesValid", 3, T0],
        ["WorkspacesResolved", 3, T0],
        ["WebhooksInstalled", 3, T0],
        ["Acyclic", 3, T0],
      ],
    );
  });

  it("says which reference does not check out, and is not Ready", () => {
    const s = computeStatus(
      vmRule(),
      facts({
        references: {
          dependentInvalid: false,
          invalidDependencies: new Set([1]),
          problems: [
            "spec.dependencies[1].version: APIExport storage.test.io in root:org:storage serves buckets at v2, not v1",
          ],
          unknown: false,
        },
      }),
      undefined,
      T0,
    );
    const c = byType(s.conditions);
    assert.deepEqual(c["ReferencesValid"]?.slice(0, 2), ["False", "DependencyInvalid"]);
    assert.deepEqual(c["Ready"]?.slice(0, 2), ["False", "DependencyInvalid"]);
    assert.match(
      c["Ready"]?.[2] ?? "",
      /ReferencesValid: spec.dependencies\[1\].version: .* serves buckets at v2, not v1/,
    );
  });

  it("names each path that failed to resolve, not why (that is the log's: another tenant's workspace)", () => {
    const f = facts({
      resolutions: new Map<string, Resolution>([
        ["root:org:storage", { ok: false, reason: "workspace root:org:storage not found" }],
        ["root:network-provider", { ok: true, cluster: NET }],
      ]),
      installs: new Map([[NET, { ok: true }]]),
    });
    const c = byType(computeStatus(vmRule(), f, undefined, T0).conditions);
    const unresolved = `root:org:storage: workspace root:org:storage not found or not readable by dep-ctrl; ${UNRESOLVED}`;
    assert.deepEqual(c["WorkspacesResolved"], ["False", "ResolutionFailed", unresolved]);
    assert.deepEqual(c["WebhooksInstalled"], ["True", "Installed", "webhook installed in root:network-provider"]);
    assert.deepEqual(c["Ready"], ["False", "ResolutionFailed", `WorkspacesResolved: ${unresolved}`]);
  });

  it("reports failed installs per workspace", () => {
    const f = facts({ installs: new Map([[NET, { ok: false, error: "403 Forbidden" }]]) });
    const c = byType(computeStatus(vmRule(), f, undefined, T0).conditions);
    assert.deepEqual(c["WebhooksInstalled"], [
      "False",
      "InstallFailed",
      "root:network-provider: 403 Forbidden; root:org:storage: not installed yet",
    ]);
    assert.equal(c["Ready"]![1], "InstallFailed");
  });

  it("reports a cycle as Acyclic=False and not Ready", () => {
    const c = byType(computeStatus(vmRule(), facts({ cycle: "dependency cycle a → b → a" }), undefined, T0).conditions);
    assert.deepEqual(c["Acyclic"], ["False", "CycleDetected", "dependency cycle a → b → a"]);
    assert.deepEqual(c["Ready"], ["False", "CycleDetected", "Acyclic: dependency cycle a → b → a"]);
  });

  it("reports a malformed field path as InvalidSpec, still protecting the valid dependencies", () => {
    const rule = parseRule(
      ruleObject("compute", "vm", { resource: "virtualmachines" }, [
        { resource: "vpcs", fieldPath: ".spec.nics[01].name" },
        { resource: "subnets" },
      ]),
    )!;
    assert.equal(rule.dependencies.length, 1);
    const s = computeStatus(rule, facts({ installs: new Map([[NET, { ok: true }]]) }), undefined, T0);
    const c = byType(s.conditions);
    assert.equal(c["Ready"]![0], "False");
    assert.equal(c["Ready"]![1], "InvalidSpec");
    assert.match(
      c["Ready"]![2],
      /^invalid rule: spec\.dependencies\[0\]\.fieldRef\.path: invalid field path ".spec.nics\[01\].name": list index has a leading zero/,
    );
    assert.equal(c["WebhooksInstalled"]![0], "True");
    assert.equal(s.dependencyCount, 2);
  });

  it("says Unknown rather than guessing for a rule with an unusable dependent", () => {
    const obj = ruleObject("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }]);
    delete (obj["spec"] as { dependent?: unknown }).dependent;
    const c = byType(computeStatus(parseRule(obj)!, facts(), undefined, T0).conditions);
    assert.deepEqual(c["Ready"], ["False", "InvalidSpec", "invalid rule: spec.dependent: Required value"]);
    assert.equal(c["WorkspacesResolved"]![0], "Unknown");
    assert.equal(c["WebhooksInstalled"]![0], "Unknown");
    assert.equal(c["Acyclic"]![0], "Unknown");
  });

  it("keeps lastTransitionTime while a condition's status holds, and moves it when it flips", () => {
    const first = computeStatus(vmRule(), facts(), undefined, T0);
    const same = computeStatus(vmRule(), facts(), first, T1);
    assert.deepEqual(same, first);
    assert.equal(statusChanged(first, same), false);

    const broken = computeStatus(vmRule(), facts({ installs: new Map() }), first, T1);
    const times = Object.fromEntries(broken.conditions!.map((c) => [c.type, c.lastTransitionTime]));
    assert.deepEqual(times, {
      Ready: T1,
      ReferencesValid: T0,
      WorkspacesResolved: T0,
      WebhooksInstalled: T1,
      Acyclic: T0,
    });
    assert.equal(statusChanged(first, broken), true);
  });

  it("updates observedGeneration without moving transition times", () => {
    const first = computeStatus(vmRule(3), facts(), undefined, T0);
    const next = computeStatus(vmRule(4), facts(), first, T1);
    assert.equal(next.observedGeneration, 4);
    assert.ok(next.conditions!.every((c) => c.observedGeneration === 4 && c.lastTransitionTime === T0));
    assert.equal(statusChanged(first, next), true);
  });

  it("does not see a change in key order or a missing status", () => {
    const s = computeStatus(vmRule(), facts(), undefined, T0);
    const reordered = JSON.parse(
      JSON.stringify({
        conditions: s.conditions,
        dependencyCount: s.dependencyCount,
        observedGeneration: s.observedGeneration,
      }),
    ) as unknown;
    assert.equal(statusChanged(reordered, s), false);
    assert.equal(statusChanged(undefined, s), true);
  });
});
