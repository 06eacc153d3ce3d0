// The plugin and the webhook agree on who blocks a delete. Same rules, same objects: for every VPC in the workspace,
// the blockers the webhook's decision names (planLookups → the live finder's matching → decide) are exactly what
// `why` lists from the refusal kcp passes on, and exactly the dependents `check`/`graph --objects` find for it. The
// objects include a VPC of the same name in another namespace that names itself, a VM there that names it, and
// cluster-scoped Gateways, which the webhook lists across namespaces for a namespaced VPC.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { AdmissionRequest, Lookup, LookupResult } from "../../src/webhook/admission.ts";
import { blockerId, clusterWideRetries, decide, planLookups } from "../../src/webhook/deletion/decision.ts";
import { matchingDependents } from "../../src/webhook/deletion/matching.ts";
import type { Target } from "../../src/webhook/deletion/target.ts";
import { reviewReply } from "../../src/webhook/http/review.ts";
import { buildRegistry } from "../../src/webhook/rules/registry.ts";
import { answerOf, parseRefusal } from "../../src/plugin/causes.ts";
import type { RuleInWorkspace } from "../../src/plugin/graph.ts";
import { findReferences, type TypeListing } from "../../src/plugin/references.ts";
import { whyResult } from "../../src/plugin/commands/why/report.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";

const NET = "network.test.io";
const WEBHOOK = "dependency-controller.dependencies.opendefense.cloud";
const network = "network" as LogicalClusterName;

// VMs and Gateways name their VPC; VPCs name a peer VPC (a rule whose dependent and dependency are the same type).
const ruleObjects = [
  dependencyRule("vm-vpc", [{ path: "root:network", resource: "vpcs" }], { cluster: "compute" }),
  dependencyRule("vpc-peer", [{ path: "root:network", resource: "vpcs", field: ".spec.peerRef.name" }], {
    cluster: "network",
    dependent: { group: NET, kind: "VPC", resource: "vpcs" },
  }),
  dependencyRule("gw-vpc", [{ path: "root:network", resource: "vpcs" }], {
    cluster: "compute",
    dependent: { kind: "Gateway", resource: "gateways" },
  }),
];
const pluginRules: RuleInWorkspace[] = ruleObjects.map((o, i) => {
  const rule = parseRule(o);
  assert.ok(rule && rule.problems.length === 0);
  return { workspace: i === 1 ? "root:network" : "root:compute", rule };
});

const obj = (namespace: string | undefined, name: string, spec: Record<string, unknown>) => ({
  metadata: { ...(namespace ? { namespace } : {}), name },
  spec,
});
const vpcs = [
  obj("a", "net", { peerRef: { name: "net" } }), // names itself: never its own blocker
  obj("b", "net", { peerRef: { name: "net" } }), // the same name in another namespace, naming itself
  obj("a", "edge", { peerRef: { name: "net" } }),
  obj("a", "other", {}),
];
const vms = [
  obj("a", "vm-1", { vpcRef: { name: "net" } }),
  obj("a", "vm-2", { vpcRef: { name: "other" } }),
  obj("b", "vm-3", { vpcRef: { name: "net" } }),
];
const gateways = [
  obj(undefined, "g-1", { vpcRef: { name: "net" } }),
  obj(undefined, "g-2", { vpcRef: { name: "other" } }),
];
const workspace: Record<string, { metadata: { namespace?: string } }[]> = { vpcs, virtualmachines: vms, gateways };

/** The live finder against this workspace: a namespaced list of the cluster-scoped Gateways is a 404. */
function find(l: Lookup): LookupResult {
  if (l.namespace !== undefined && l.dependent.resource === "gateways")
    return { ok: true, dependents: [], complete: true, notBound: true };
  const listed = (workspace[l.dependent.resource] ?? []).filter(
    (o) => l.namespace === undefined || o.metadata.namespace === l.namespace,
  );
  return { ok: true, dependents: matchingDependents(listed, l), complete: true };
}

/** The webhook: the registry's rules for VPCs, the lookups of a dry-run DELETE, the live finder's matching. */
function webhookDecision(namespace: string, name: string) {
  const registry = buildRegistry(ruleObjects, new Map([["root:network", { ok: true as const, cluster: network }]]));
  const request: AdmissionRequest = {
    uid: "u",
    operation: "DELETE",
    resource: { group: NET, version: "v1", resource: "vpcs" },
    name,
    namespace,
    oldObject: { metadata: { name, namespace, annotations: { "kcp.io/cluster": "consumer1" } } },
    dryRun: true,
  };
  const plan = planLookups(request, registry.find(network, { group: NET, resource: "vpcs" }));
  assert.equal(plan.kind, "lookup");
  if (plan.kind !== "lookup") throw new Error("no lookups");
  const results = plan.lookups.map(find);
  for (const [i, retry] of clusterWideRetries(plan, results)) results[i] = find(retry);
  return decide(plan, results);
}

describe("the plugin's blockers are the webhook's", () => {
  const listings = new Map<string, TypeListing>([
    [`vpcs.${NET}`, { group: NET, resource: "vpcs", kind: "VPC", namespaced: true, items: vpcs }],
    [
      "virtualmachines.compute.test.io",
      { group: "compute.test.io", resource: "virtualmachines", kind: "VirtualMachine", namespaced: true, items: vms },
    ],
    [
      "gateways.compute.test.io",
      { group: "compute.test.io", resource: "gateways", kind: "Gateway", namespaced: false, items: gateways },
    ],
  ]);
  const refs = findReferences(pluginRules, listings);
  const expected: Record<string, string[]> = {
    "a/net": ["Gateway/g-1", "VPC/edge", "VirtualMachine/vm-1"],
    "b/net": ["Gateway/g-1", "VirtualMachine/vm-3"],
    "a/edge": [],
    "a/other": ["Gateway/g-2", "VirtualMachine/vm-2"],
  };

  for (const [key, want] of Object.entries(expected)) {
    const [namespace, name] = key.split("/") as [string, string];
    it(`${key}: the decision, why and check name the same blockers`, () => {
      const decision = webhookDecision(namespace, name);
      const target: Target = { consumer: "consumer1" as LogicalClusterName, resource: "vpcs", namespace, name };

      // check and graph --objects: the references that point at this VPC.
      const fromCheck = refs
        .filter((r) => r.to.resource === "vpcs" && r.to.namespace === namespace && r.to.name === name)
        .map((r) => blockerId(r.from.kind, { name: r.from.name, namespace: r.from.namespace, field: r.field }, target));
      assert.deepEqual([...new Set(fromCheck)].sort(), want);

      if (want.length === 0) {
        assert.ok(decision.allowed, JSON.stringify(decision));
        return;
      }
      assert.ok(!decision.allowed && decision.code === 409, JSON.stringify(decision));
      assert.deepEqual(decision.blockers, want);

      // why: the refusal as kcp passes it on (the webhook's Status, its message prefixed by kcp).
      const status = reviewReply("u", decision).response.status!;
      const answer = { ...status, message: `admission webhook "${WEBHOOK}" denied the request: ${status.message}` };
      const resource = { group: NET, version: "v1", name: "vpcs", kind: "VPC", namespaced: true };
      const why = whyResult({ resource, name, namespace, workspace: "root:consumer1" }, answerOf(409, answer));
      assert.equal(why.exitCode, 1);
      const listed = parseRefusal(answer).blockers.map((b) => `${b.kind}/${b.name}`);
      assert.deepEqual(listed, want);
      for (const b of parseRefusal(answer).blockers)
        assert.match(
          why.text,
          new RegExp(`\\n${b.kind}\\s+${namespace}\\s+${b.name}\\s+${b.field!.replace(/\./g, "\\.")}`),
        );
      assert.match(why.text, new RegExp(`still referenced by ${want.length} object`));
    });
  }
});
