// Careless authors on a real kcp (one kcp, index lookup): a rule's faults refuse only the DELETEs where that rule's
// dependents may be, and a rule that never protected refuses nobody (docs/architecture.md, "Blast radius"). In each
// case consumer1, which binds neither faulty author's export, deletes a free VPC and is refused (409, naming the VM)
// on a VPC its own VM references, exactly as before; the faulty rule's status names its fault; and the consumer that
// holds the faulty rule's dependents gets the documented answer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { apply, createWorkspace, waitForBinding, type KObject } from "../../tools/kcp/api.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { EXPORT_NAME, PATHS, depCtrlBinding, grantIndex } from "../../tools/kcp/topology.ts";
import { RULES, VPCS, assertDenied, at, create, e2eSuite, tryDelete, vm, vpc, waitForProtection } from "./helpers.ts";

const e2e = e2eSuite();
const GADGETS = { path: "root:gadget-provider", export: "gadget.test.io", kind: "Gadget", resource: "gadgets" };
const WIDGETS = { path: "root:careless-provider", export: "widget.test.io", kind: "Widget", resource: "widgets" };
const HOLDER = "root:gadget-consumer"; // binds the network, gadget and widget exports; holds their dependents
const ws = (p: string) => e2e.kcp.ws(p);

/** A provider exporting one namespaced kind whose objects name a VPC at .spec.vpcRef.name. */
function exportOf(p: typeof GADGETS): KObject[] {
  const group = p.export;
  const vpcRef = { type: "object", properties: { name: { type: "string" } } };
  const schema = { type: "object", properties: { spec: { type: "object", properties: { vpcRef } } } };
  const names = { kind: p.kind, listKind: `${p.kind}List`, plural: p.resource, singular: p.kind.toLowerCase() };
  return [
    {
      apiVersion: "apis.kcp.io/v1alpha1",
      kind: "APIResourceSchema",
      metadata: { name: `v1.${p.resource}.${group}` },
      spec: { group, names, scope: "Namespaced", versions: [{ name: "v1", served: true, storage: true, schema }] },
    },
    {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIExport",
      metadata: { name: group },
      spec: { resources: [{ group, name: p.resource, schema: `v1.${p.resource}.${group}`, storage: { crd: {} } }] },
    },
  ];
}

const binding = (name: string, path: string): KObject => ({
  apiVersion: "apis.kcp.io/v1alpha2",
  kind: "APIBinding",
  metadata: { name },
  spec: { reference: { export: { path, name } } },
});

/** The dep-ctrl binding with only the webhook-configuration claim accepted: the read-only claims declined. */
function declinedBinding(): KObject[] {
  return depCtrlBinding(PATHS.depCtrl).map((b) => {
    const spec = b["spec"] as { permissionClaims: { group: string; state: string }[] };
    for (const c of spec.permissionClaims) if (c.group === "apis.kcp.io") c.state = "Rejected";
    return b;
  });
}

const item = (p: typeof GADGETS, name: string, vpcName: string): KObject => ({
  apiVersion: `${p.export}/v1`,
  kind: p.kind,
  metadata: { name, namespace: "default" },
  spec: { vpcRef: { name: vpcName } },
});

const ruleFor = (p: typeof GADGETS, name: string, path: string = PATHS.network): KObject =>
  dependencyRule(name, [{ resource: "vpcs", path, exportName: "network.test.io" }], {
    dependent: { group: p.export, kind: p.kind, resource: p.resource },
  });

/** The faulty authors' workspaces and the consumer that holds their dependents (in the first test: after the suite's before). */
async function setUpAuthors(): Promise<void> {
  for (const p of [GADGETS, WIDGETS]) {
    await createWorkspace(e2e.kcp.admin, p.path);
    await apply(ws(p.path), exportOf(p));
  }
  await apply(ws(GADGETS.path), depCtrlBinding(PATHS.depCtrl));
  await apply(ws(WIDGETS.path), declinedBinding());
  for (const p of [GADGETS, WIDGETS]) await waitForBinding(ws(p.path), EXPORT_NAME);
  await grantIndex(e2e.kcp, WIDGETS.path, WIDGETS.export); // its only fault is the declined claims
  await createWorkspace(e2e.kcp.admin, HOLDER);
  await apply(ws(HOLDER), [
    binding("network.test.io", PATHS.network),
    binding(GADGETS.export, GADGETS.path),
    binding(WIDGETS.export, WIDGETS.path),
  ]);
  for (const b of ["network.test.io", GADGETS.export, WIDGETS.export]) await waitForBinding(ws(HOLDER), b);
  await create(ws(HOLDER), vpc("g-vpc"), item(GADGETS, "g-1", "g-vpc"), vpc("w-vpc"), item(WIDGETS, "w-1", "w-vpc"));
}

/** consumer1 as before any faulty rule: a free VPC deleted, a VPC its VM references refused 409 naming the VM. */
async function consumer1AsBefore(tag: string): Promise<void> {
  const c1 = ws(PATHS.consumer1);
  await create(c1, vpc(`free-${tag}`), vpc(`used-${tag}`), vm(`vm-${tag}`, { vpc: `used-${tag}` }));
  await waitForProtection(c1, `${at(VPCS)}/used-${tag}`, true);
  assert.deepEqual(await tryDelete(c1, `${at(VPCS)}/free-${tag}`), { allowed: true });
  assertDenied(
    await tryDelete(c1, `${at(VPCS)}/used-${tag}`),
    new RegExp(`cannot delete vpcs/used-${tag}: still referenced by VirtualMachine/vm-${tag}$`),
  );
}

type Cond = { type: string; status: string; reason: string; message: string };
/** Waits for the rule's condition `type` to have `reason`; returns it. */
async function condition(p: typeof GADGETS, rule: string, type: string, reason: string): Promise<Cond> {
  return waitFor(
    `rule ${rule}: ${type} reason ${reason}`,
    async () => {
      const r = await ws(p.path).get<{ status?: { conditions?: Cond[] } }>(`${RULES}/${rule}`);
      const c = r.status?.conditions?.find((x) => x.type === type);
      return c?.reason === reason ? c : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 1_000 },
  );
}

test("baseline: consumer1 as it is before any faulty rule", async () => {
  await setUpAuthors();
  await consumer1AsBefore("base");
});

test("a rule whose provider path answers 403 is not enforced: nobody waits for it", async () => {
  await apply(ws(GADGETS.path), [ruleFor(GADGETS, "gadgets-private", `${PATHS.consumer1}:private`)]);
  const c = await condition(GADGETS, "gadgets-private", "WorkspacesResolved", "ResolutionFailed");
  assert.match(c.message, /root:consumer1:private/);
  await condition(GADGETS, "gadgets-private", "Ready", "ResolutionFailed");
  await consumer1AsBefore("path403");
  await ws(GADGETS.path).request("DELETE", `${RULES}/gadgets-private`);
});

test("a rule whose author never gave the index consent is not enforced, anywhere", async () => {
  await apply(ws(GADGETS.path), [ruleFor(GADGETS, "gadgets-need-vpc")]);
  const c = await condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "IndexForbidden");
  assert.match(c.message, /^not enforced: .*apply deploy\/rbac\/provider-index\.yaml/);
  await consumer1AsBefore("noconsent");
  // Where its dependents live, the documented answer: allowed (the rule protects nothing until consent is given).
  assert.deepEqual(await tryDelete(ws(HOLDER), `${at(VPCS)}/g-vpc`, { dryRun: true }), { allowed: true });
});

test("a revoked consent fails closed only where the rule's dependents were", async () => {
  await grantIndex(e2e.kcp, GADGETS.path, GADGETS.export);
  await waitForProtection(ws(HOLDER), `${at(VPCS)}/g-vpc`, true, 180_000);
  assertDenied(await tryDelete(ws(HOLDER), `${at(VPCS)}/g-vpc`, { dryRun: true }), /still referenced by Gadget\/g-1$/);
  await condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "Indexed");

  const crb = `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kcp-dependency-webhook-index-${GADGETS.export}`;
  await ws(GADGETS.path).request("DELETE", crb);
  // The open watch notices when it is reopened (within its timeout), the controller at its next pass.
  const c = await condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "IndexRevoked");
  assert.match(c.message, /refused \(503\) until \d{4}-\d\d-\d\dT[\d:]+Z, then this rule is not enforced/);
  await consumer1AsBefore("revoked");
  const refused = await waitFor("the holder's VPC refused 503", async () => {
    const r = await tryDelete(ws(HOLDER), `${at(VPCS)}/g-vpc`, { dryRun: true });
    return !r.allowed && r.status === 503 ? r : undefined;
  });
  assert.ok(!refused.allowed);
  assert.match(refused.message, /cannot check dependents of vpcs\/g-vpc yet: the index of gadgets\.gadget\.test\.io/);
  await ws(GADGETS.path).request("DELETE", `${RULES}/gadgets-need-vpc`);
});

test("a rule whose author declined the read-only claims is not enforced, and says so", async () => {
  await apply(ws(WIDGETS.path), [ruleFor(WIDGETS, "widgets-need-vpc")]);
  const c = await condition(WIDGETS, "widgets-need-vpc", "ReferencesValid", "ChecksDeclined");
  assert.match(c.message, /^not enforced: this workspace declined the read-only claims/);
  await condition(WIDGETS, "widgets-need-vpc", "Ready", "ChecksDeclined");
  await consumer1AsBefore("declined");
  // Where its dependents live: allowed, although the index sees the widget naming the VPC.
  assert.deepEqual(await tryDelete(ws(HOLDER), `${at(VPCS)}/w-vpc`, { dryRun: true }), { allowed: true });
});
