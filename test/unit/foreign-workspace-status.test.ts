// A rule's status must not tell its author whether another tenant's workspace exists: "not found" (404) and "exists,
// but dep-ctrl may not read it" (403) read the same, in WorkspacesResolved and in ReferencesValid, in the words
// /validate-rules uses (unconfirmed(), unresolvedWorkspace() in src/api/references.ts). Before, the messages carried
// kcp's answer: "workspace root:x not found" against "not allowed to read workspace root:x: grant get ...".
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unconfirmed, type ExportFacts } from "../../src/api/references.ts";
import { parseRule } from "../../src/api/rule.ts";
import type { Condition, LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { checkReferences } from "../../src/controller/references.ts";
import { computeStatus, type RuleFacts } from "../../src/controller/status.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { ruleObject } from "./helpers-rules.ts";

const OWN = logicalClusterName("computecluster");
const OTHER = logicalClusterName("othercluster");
const PATH = "root:other-tenant";
const rule = parseRule(
  ruleObject("computecluster", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs", path: PATH }]),
)!;
const T0 = "2026-01-01T00:00:00Z";

function conditionOf(resolution: Resolution, type: string): Condition {
  const facts: RuleFacts = {
    resolutions: new Map([[PATH, resolution]]),
    installs: new Map<LogicalClusterName, { ok: true }>(),
  };
  return computeStatus(rule, facts, undefined, T0).conditions!.find((c) => c.type === type)!;
}

/** What kcp tells the controller's resolver about a path the author may not see, one answer per way. */
const RESOLUTIONS: Record<string, Resolution> = {
  "404 not found": { ok: false, reason: `workspace ${PATH} not found` },
  "403 not readable": {
    ok: false,
    transient: true,
    reason: `not allowed to read workspace ${PATH}: grant get on tenancy.kcp.io workspaces and the access verb in root`,
  },
  "being deleted": { ok: false, reason: `workspace ${PATH} is being deleted` },
  "an error": { ok: false, transient: true, reason: `reading workspace ${PATH}: 503 Service Unavailable` },
};

describe("rule status about another tenant's workspace", () => {
  it("WorkspacesResolved reads the same for a 404, a 403, a workspace being deleted and an error", () => {
    const seen = Object.entries(RESOLUTIONS).map(([how, r]) => [how, conditionOf(r, "WorkspacesResolved")] as const);
    for (const [how, c] of seen) {
      assert.deepEqual([c.status, c.reason], ["False", "ResolutionFailed"], how);
      assert.equal(c.message, seen[0]![1].message, `${how} reads like ${seen[0]![0]}`);
      assert.doesNotMatch(c.message, /allowed to read|grant get|being deleted|503/, how);
    }
    assert.match(
      seen[0]![1].message,
      /^root:other-tenant: workspace root:other-tenant not found or not readable by dep-ctrl; not enforced until it resolves/,
    );
  });

  it("a path that resolved before and fails now says so in the same words, whatever kcp answered", () => {
    const stale = (reason: string): Resolution => ({ ok: true, cluster: OTHER, stale: reason });
    const a = conditionOf(stale(`not allowed to read workspace ${PATH}`), "WorkspacesResolved");
    const b = conditionOf(stale("reading workspace: 503"), "WorkspacesResolved");
    assert.equal(a.message, b.message);
    assert.match(
      a.message,
      /not found or not readable by dep-ctrl now; still protecting in its last logical cluster othercluster$/,
    );
  });

  it("ReferencesValid reads the same for another workspace's export that is missing (404) or not readable (403)", async () => {
    const ownExport: ExportFacts = {
      found: true,
      resources: [{ group: "compute.test.io", name: "virtualmachines", schema: "v1.virtualmachines" }],
      schemas: new Map([["v1.virtualmachines", { kind: "VirtualMachine", versions: [{ name: "v1", served: true }] }]]),
    };
    const messageWith = async (other: ExportFacts): Promise<string[]> => {
      const verdicts = await checkReferences([rule], new Map([[PATH, { ok: true, cluster: OTHER }]]), (cluster) =>
        Promise.resolve(cluster === OWN ? ownExport : other),
      );
      const v = [...verdicts.values()][0]!;
      assert.equal(v.hidden?.length, 1, "the real reason is kept for the controller's log");
      return v.problems;
    };
    const missing = await messageWith({ found: false, definite: true });
    const forbidden = await messageWith({ found: false, definite: false, reason: "403 Forbidden", declined: true });
    const elsewhere = await messageWith({ ...ownExport, resources: [] });
    assert.deepEqual(missing, [unconfirmed(rule.dependencies[0]!)]);
    assert.deepEqual(forbidden, missing);
    assert.deepEqual(elsewhere, missing);
  });

  it("the rule's own workspace is told in full", async () => {
    const own = parseRule(
      ruleObject("computecluster", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs", path: "root:compute" }]),
    )!;
    const verdicts = await checkReferences([own], new Map([["root:compute", { ok: true, cluster: OWN }]]), () =>
      Promise.resolve({ found: false, definite: true }),
    );
    const v = [...verdicts.values()][0]!;
    assert.match(
      v.problems.join("; "),
      /spec\.dependencies\[0\]: APIExport network\.test\.io in root:compute not found/,
    );
    assert.equal(v.hidden, undefined);
  });
});
