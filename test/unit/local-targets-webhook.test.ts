// A local target is decided on the one deletion path: a Secret DELETE that kcp sends from a consumer workspace's own
// configuration to /validate/<the rule's cluster> finds the rule under (that cluster, core secrets), lists the rule's
// dependents (Endpoints) in the consumer workspace, and is refused naming the Endpoint; nothing else matches it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import { createAdmissionHandler } from "../../src/webhook/deletion/handler.ts";
import type { DependentFinder } from "../../src/webhook/deletion/finder.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { buildRegistry } from "../../src/webhook/rules/registry.ts";
import { ruleObject } from "./helpers-rules.ts";

const ARC = logicalClusterName("arc");
const rule = ruleObject("arc", "endpoint-secrets", { group: "arc.test.io", resource: "endpoints", kind: "Endpoint" }, [
  { resource: "secrets", local: true, fieldPath: ".spec.secretRef.name" },
]);
const registry = buildRegistry([rule], new Map());

function deleteOf(resource: string, name: string): AdmissionRequest {
  return {
    uid: "u",
    operation: "DELETE",
    resource: { group: "", version: "v1", resource },
    name,
    namespace: "default",
    oldObject: { metadata: { name, namespace: "default", annotations: { "kcp.io/cluster": "consumer1" } } },
  };
}

describe("local targets in the webhook", () => {
  it("registers the rule under its own cluster and the core type only", () => {
    assert.deepEqual(registry.problems, []);
    const found = registry.find(ARC, { group: "", resource: "secrets" }).entries;
    assert.deepEqual(
      found.map((e) => [e.rule, e.dependent.resource, e.dependent.exportCluster, e.fieldPaths.map((p) => p.source)]),
      [["arc/endpoint-secrets", "endpoints", "arc", [".spec.secretRef.name"]]],
    );
    assert.deepEqual(registry.find(ARC, { group: "", resource: "configmaps" }).entries, []);
    assert.deepEqual(registry.find(logicalClusterName("other"), { group: "", resource: "secrets" }).entries, []);
    assert.deepEqual(registry.find(undefined, { group: "", resource: "secrets" }).entries, [], "legacy route");
  });

  it("refuses a referenced Secret naming the Endpoint, and allows a free one, from the consumer's Endpoints", async () => {
    const asked: string[] = [];
    const finder: DependentFinder = {
      find: (q) => {
        asked.push(`${q.consumer}|${q.dependent.resource}|${q.namespace}|${q.name}`);
        const held = q.name === "held";
        return Promise.resolve({
          ok: true,
          complete: true,
          dependents: held ? [{ name: "e1", field: ".spec.secretRef.name" }] : [],
        });
      },
    };
    const handler = createAdmissionHandler({
      registry: () => registry,
      finder,
      logger: pino({ level: "silent" }),
      metrics: createWebhookMetrics(new Registry()),
    });
    const held = await handler(deleteOf("secrets", "held"), ARC);
    assert.ok(!held.allowed);
    assert.equal(held.code, 409);
    assert.match(held.message, /cannot delete secrets\/held: still referenced by Endpoint\/e1$/);
    assert.equal((await handler(deleteOf("secrets", "free"), ARC)).allowed, true);
    assert.equal((await handler(deleteOf("configmaps", "held"), ARC)).allowed, true, "no rule names configmaps");
    assert.deepEqual(asked, ["consumer1|endpoints|default|held", "consumer1|endpoints|default|free"]);
  });
});
