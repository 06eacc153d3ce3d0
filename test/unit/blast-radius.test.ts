// The DELETE decision when a rule's dependents index cannot answer: it may refuse only where that rule's dependents
// may be, and a rule that never protected refuses nobody (docs/architecture.md, "Blast radius").
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AdmissionRequest, LookupResult, UnavailableSeen } from "../../src/webhook/admission.ts";
import { decide, planLookups } from "../../src/webhook/deletion/decision.ts";
import { INDEX_NOT_READABLE } from "../../src/webhook/deletion/index/index.ts";
import type { IndexTrust, RuleEntry } from "../../src/webhook/rules/registry.ts";
import { VM_DEPENDENT, fp } from "./helpers-rules.ts";

const req: AdmissionRequest = {
  uid: "u1",
  operation: "DELETE",
  resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
  name: "my-vpc",
  namespace: "default",
  oldObject: { metadata: { name: "my-vpc", namespace: "default", annotations: { "kcp.io/cluster": "consumer1" } } },
};

const entry = (rule: string, index: IndexTrust | undefined): RuleEntry => ({
  rule,
  dependent: VM_DEPENDENT,
  fieldPaths: [fp(".spec.vpcRef.name")],
  enforcement: "Deny",
  ...(index ? { index } : {}),
});

const unavailable = (seen?: UnavailableSeen): LookupResult => ({
  ok: false,
  error: "virtualmachines: 403 Forbidden",
  unavailable: INDEX_NOT_READABLE,
  ...(seen ? { seen } : {}),
});

function decideWith(entries: RuleEntry[], result: LookupResult) {
  const plan = planLookups(req, { entries });
  if (plan.kind !== "lookup") throw new Error("want a lookup plan");
  return decide(
    plan,
    plan.lookups.map(() => result),
  );
}

const refused = (d: ReturnType<typeof decideWith>) => !d.allowed && d.code === 503;

describe("blast radius of an unreadable dependents index", () => {
  it("a type this process never listed, of a rule that never protected: decided as if the rule were absent", () => {
    for (const trust of [undefined, "unknown", "not-enforced"] as const)
      assert.deepEqual(decideWith([entry("evil/r", trust)], unavailable({ everSynced: false, consumerSeen: false })), {
        allowed: true,
        reason: "no-dependents",
      });
  });

  it("a rule the status says protected, on a replica that never listed its type: fails closed (503)", () => {
    assert.ok(
      refused(decideWith([entry("p/r", "protected")], unavailable({ everSynced: false, consumerSeen: false }))),
    );
  });

  it("a type listed before: refused only in consumer workspaces that held its dependents then", () => {
    assert.ok(refused(decideWith([entry("p/r", "protected")], unavailable({ everSynced: true, consumerSeen: true }))));
    assert.ok(refused(decideWith([entry("p/r", "unknown")], unavailable({ everSynced: true, consumerSeen: true }))));
    assert.deepEqual(decideWith([entry("p/r", "protected")], unavailable({ everSynced: true, consumerSeen: false })), {
      allowed: true,
      reason: "no-dependents",
    });
  });

  it("a revocation past its grace (status: not enforced) refuses nobody, even where dependents were", () => {
    const d = decideWith([entry("p/r", "not-enforced")], unavailable({ everSynced: true, consumerSeen: true }));
    assert.deepEqual(d, { allowed: true, reason: "no-dependents" });
  });

  it("two rules sharing a lookup: one that protected keeps it failing closed", () => {
    const d = decideWith(
      [entry("a/r", "not-enforced"), entry("b/r", "protected")],
      unavailable({ everSynced: false, consumerSeen: false }),
    );
    assert.ok(refused(d));
  });

  it("a finder without a last good view (no `seen`) refuses as before", () => {
    assert.ok(refused(decideWith([entry("p/r", "not-enforced")], unavailable())));
  });

  it("the 503 names no rule, workspace, dependent type or error of another tenant", () => {
    const d = decideWith(
      [entry("secret-ws/secret-rule", "protected")],
      unavailable({ everSynced: true, consumerSeen: true }),
    );
    assert.ok(!d.allowed);
    for (const s of ["secret-ws", "secret-rule", "403", VM_DEPENDENT.resource, VM_DEPENDENT.group])
      assert.ok(!d.message.includes(s), d.message);
  });
});
