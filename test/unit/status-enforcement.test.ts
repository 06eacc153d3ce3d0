// What a rule's status says when one of its faults makes it not enforced, or keeps it failing closed for a while.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Condition, DependencyRuleStatus, LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { parseRule } from "../../src/api/rule.ts";
import { computeStatus, REVOCATION_GRACE_MS, type RuleFacts } from "../../src/controller/status.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { ruleObject } from "./helpers-rules.ts";

const NET = logicalClusterName("netcluster");
const rule = parseRule(ruleObject("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }], 1))!;
const T0 = "2026-01-01T00:00:00Z";
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString().replace(/\.\d{3}Z$/, "Z");

function facts(over: Partial<RuleFacts> = {}): RuleFacts {
  return {
    resolutions: new Map<string, Resolution>([["root:network-provider", { ok: true, cluster: NET }]]),
    installs: new Map<LogicalClusterName, { ok: true }>([[NET, { ok: true }]]),
    references: { dependentInvalid: false, invalidDependencies: new Set(), problems: [], unknown: false },
    ...over,
  };
}

const cond = (s: DependencyRuleStatus, type: string): Condition => s.conditions!.find((c) => c.type === type)!;
const forbidden: RuleFacts["index"] = { state: "failing", reason: "Forbidden" };

describe("rule status: not enforced, loudly", () => {
  it("an author who declined the read-only claims: ReferencesValid=False ChecksDeclined, Ready=False, with the fix", () => {
    const s = computeStatus(
      rule,
      facts({
        references: {
          dependentInvalid: false,
          invalidDependencies: new Set(),
          problems: ["spec.dependent: cannot check APIExport compute in this rule's workspace: not allowed to read it"],
          unknown: true,
          declined: true,
        },
      }),
      undefined,
      T0,
    );
    assert.equal(cond(s, "ReferencesValid").reason, "ChecksDeclined");
    assert.equal(cond(s, "ReferencesValid").status, "False");
    assert.match(cond(s, "ReferencesValid").message, /^not enforced: .*accept them in its APIBinding/);
    assert.deepEqual([cond(s, "Ready").status, cond(s, "Ready").reason], ["False", "ChecksDeclined"]);
  });

  it("a path that never resolved (403): ResolutionFailed says it is not enforced and what to check", () => {
    const resolutions = new Map<string, Resolution>([
      ["root:network-provider", { ok: false, transient: true, reason: "not allowed to read workspace" }],
    ]);
    const s = computeStatus(rule, facts({ resolutions }), undefined, T0);
    assert.equal(cond(s, "WorkspacesResolved").reason, "ResolutionFailed");
    assert.match(
      cond(s, "WorkspacesResolved").message,
      /^root:network-provider: workspace root:network-provider not found or not readable by dep-ctrl; not enforced until it resolves: .*: deploy\/rbac\/workspace-resolution\.yaml$/,
    );
    assert.deepEqual([cond(s, "Ready").status, cond(s, "Ready").reason], ["False", "ResolutionFailed"]);
  });

  it("an index consent never given: IndexForbidden, not enforced, and how to give it", () => {
    const s = computeStatus(rule, facts({ index: forbidden }), undefined, T0);
    assert.equal(cond(s, "DependentsIndexed").reason, "IndexForbidden");
    assert.match(cond(s, "DependentsIndexed").message, /^not enforced: .*apply deploy\/rbac\/provider-index\.yaml/);
    assert.deepEqual([cond(s, "Ready").status, cond(s, "Ready").reason], ["False", "IndexForbidden"]);
  });

  it("an index that never listed for another reason: IndexFailing, not enforced", () => {
    const s = computeStatus(rule, facts({ index: { state: "failing", reason: "Error" } }), undefined, T0);
    assert.equal(cond(s, "DependentsIndexed").reason, "IndexFailing");
    assert.match(cond(s, "DependentsIndexed").message, /^not enforced/);
  });
});

describe("rule status: a revoked consent fails closed for REVOCATION_GRACE_MS, then is not enforced", () => {
  it("Indexed → IndexRevoked (until when) → IndexRevocationExpired; the start survives every pass", () => {
    const indexed = computeStatus(rule, facts({ index: { state: "ready" } }), undefined, T0);
    assert.equal(cond(indexed, "DependentsIndexed").reason, "Indexed");
    const t1 = at(60_000);
    const revoked = computeStatus(rule, facts({ index: forbidden }), indexed, t1);
    const c = cond(revoked, "DependentsIndexed");
    assert.equal(c.reason, "IndexRevoked");
    assert.equal(c.lastTransitionTime, t1);
    const until = at(60_000 + REVOCATION_GRACE_MS);
    assert.match(c.message, new RegExp(`refused \\(503\\) until ${until}, then this rule is not enforced`));
    // Passes during the grace write the same status (nothing to rewrite).
    const later = computeStatus(rule, facts({ index: forbidden }), revoked, at(60_000 + REVOCATION_GRACE_MS - 1_000));
    assert.deepEqual(later, revoked);
    const expired = computeStatus(rule, facts({ index: forbidden }), later, until);
    assert.equal(cond(expired, "DependentsIndexed").reason, "IndexRevocationExpired");
    assert.match(cond(expired, "DependentsIndexed").message, new RegExp(`^not enforced since ${until}`));
    assert.equal(cond(expired, "DependentsIndexed").lastTransitionTime, t1);
    // Consent given again: protected again.
    const back = computeStatus(rule, facts({ index: { state: "ready" } }), expired, at(REVOCATION_GRACE_MS * 3));
    assert.equal(cond(back, "DependentsIndexed").reason, "Indexed");
  });

  it("the grace is the caller's to set", () => {
    const indexed = computeStatus(rule, facts({ index: { state: "ready" } }), undefined, T0);
    const revoked = computeStatus(rule, facts({ index: forbidden, revocationGraceMs: 1_000 }), indexed, T0);
    const expired = computeStatus(rule, facts({ index: forbidden, revocationGraceMs: 1_000 }), revoked, at(1_000));
    assert.equal(cond(expired, "DependentsIndexed").reason, "IndexRevocationExpired");
  });

  it("an index that worked and now fails for another reason (shard down): IndexLost, failing closed, no grace", () => {
    const indexed = computeStatus(rule, facts({ index: { state: "ready" } }), undefined, T0);
    const lost = computeStatus(rule, facts({ index: { state: "failing", reason: "Error" } }), indexed, at(1));
    assert.equal(cond(lost, "DependentsIndexed").reason, "IndexLost");
    const much = computeStatus(
      rule,
      facts({ index: { state: "failing", reason: "Error" } }),
      lost,
      at(10 * REVOCATION_GRACE_MS),
    );
    assert.equal(cond(much, "DependentsIndexed").reason, "IndexLost");
  });

  it("a replica listing again (restart) keeps a protected rule protected: IndexResyncing", () => {
    const indexed = computeStatus(rule, facts({ index: { state: "ready" } }), undefined, T0);
    const again = computeStatus(rule, facts({ index: { state: "syncing" } }), indexed, at(1));
    assert.equal(cond(again, "DependentsIndexed").reason, "IndexResyncing");
    const fresh = computeStatus(rule, facts({ index: { state: "syncing" } }), undefined, T0);
    assert.equal(cond(fresh, "DependentsIndexed").reason, "IndexSyncing");
    assert.match(cond(fresh, "DependentsIndexed").message, /not enforced yet/);
    // Ready says whether the rule refuses now: yes while a protecting index lists again, not before the first list.
    assert.deepEqual([cond(again, "Ready").status, cond(again, "Ready").reason], ["True", "Ready"]);
    assert.deepEqual([cond(fresh, "Ready").status, cond(fresh, "Ready").reason], ["False", "IndexSyncing"]);
    assert.match(cond(fresh, "Ready").message, /^DependentsIndexed: .*not enforced yet$/);
  });

  it("a rule the webhook has not reported on yet is not Ready, and turns Ready once its type is indexed", () => {
    const unreported = computeStatus(rule, facts({ index: { state: "missing" } }), undefined, T0);
    assert.equal(cond(unreported, "DependentsIndexed").reason, "NotReported");
    assert.deepEqual([cond(unreported, "Ready").status, cond(unreported, "Ready").reason], ["False", "NotReported"]);
    const indexed = computeStatus(rule, facts({ index: { state: "ready" } }), unreported, at(1));
    assert.deepEqual([cond(indexed, "Ready").status, cond(indexed, "Ready").reason], ["True", "Ready"]);
    // Without a report (live mode, or no index-mode webhook yet) there is no DependentsIndexed to wait for.
    const live = computeStatus(rule, facts(), undefined, T0);
    assert.deepEqual([cond(live, "Ready").status, cond(live, "Ready").reason], ["True", "Ready"]);
  });
});
