// Scenario 12: the same product on a two-shard kcp, through the front-proxy. Providers and consumer1 live on the root
// shard, consumer2 on shard-1; the webhook's lookup RBAC is applied to each shard's system:admin directly; and a rule
// that lives in a workspace on shard-1 is seen by both binaries (one virtual-workspace endpoint per shard).
import { readFileSync } from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";
import { apply, createWorkspace, waitForBinding } from "../../tools/kcp/api.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { startShardedKcp } from "../../tools/kcp/sharded.ts";
import { ENDPOINT_SLICES_PATH, endpointUrls, type APIExportEndpointSlice } from "../../src/kcp/virtualworkspace.ts";
import { EXPORT_NAME, PATHS, TOKENS, depCtrlBinding, vmRule } from "../../tools/kcp/topology.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import {
  RULES,
  VPCS,
  assertDenied,
  at,
  create,
  e2eSuite,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";

const e2e = e2eSuite(() => startShardedKcp({ tokens: TOKENS }), {
  placement: { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" },
});
const consumers = () => [
  { name: "consumer1 (root shard)", ws: e2e.kcp.ws(PATHS.consumer1) },
  { name: "consumer2 (shard-1)", ws: e2e.kcp.ws(PATHS.consumer2) },
];

test("12. the controller installs the webhook configuration in the provider on the root shard", async () => {
  await waitForVwc(e2e.kcp, true, 120_000);
});

test("12/2. a referenced VPC is protected on both shards", async () => {
  for (const { name, ws } of consumers()) {
    await create(ws, vpc("my-vpc"), vm("my-vm", { vpc: "my-vpc" }));
    await waitForProtection(ws, `${at(VPCS)}/my-vpc`, true);
    const outcome = await tryDelete(ws, `${at(VPCS)}/my-vpc`);
    assertDenied(outcome, /cannot delete vpcs\/my-vpc: still referenced by VirtualMachine\/my-vm$/);
    assert.ok(!outcome.allowed, name);
  }
});

test("12/4. a same-named VPC without VMs deletes freely, whichever shard holds the VM", async () => {
  const [c1, c2] = consumers();
  assert.ok(c1 && c2);
  await create(c1.ws, vpc("iso-1"), vm("iso-1-vm", { vpc: "iso-1" }));
  await create(c2.ws, vpc("iso-1"));
  await create(c2.ws, vpc("iso-2"), vm("iso-2-vm", { vpc: "iso-2" }));
  await create(c1.ws, vpc("iso-2"));
  assert.deepEqual(await tryDelete(c2.ws, `${at(VPCS)}/iso-1`), { allowed: true });
  assert.deepEqual(await tryDelete(c1.ws, `${at(VPCS)}/iso-2`), { allowed: true });
  assertDenied(await tryDelete(c1.ws, `${at(VPCS)}/iso-1`), /VirtualMachine\/iso-1-vm/);
  assertDenied(await tryDelete(c2.ws, `${at(VPCS)}/iso-2`), /VirtualMachine\/iso-2-vm/);
});

test("12/7. deleting the rule lifts protection on both shards; recreating it restores protection", async () => {
  const compute = e2e.kcp.ws(PATHS.compute);
  await compute.request("DELETE", `${RULES}/vm-dependencies`);
  await waitForVwc(e2e.kcp, false);
  for (const { ws } of consumers()) await waitForProtection(ws, `${at(VPCS)}/my-vpc`, false);
  await apply(compute, vmRule(e2e.topo.vars));
  await waitForVwc(e2e.kcp, true);
  for (const { ws } of consumers()) {
    await waitForProtection(ws, `${at(VPCS)}/my-vpc`, true);
    assertDenied(await tryDelete(ws, `${at(VPCS)}/my-vpc`), /still referenced by VirtualMachine\/my-vm$/);
  }
});

test("12/rule on shard-1: a rule in a provider workspace on shard-1 is seen by the controller and the webhook", async () => {
  const edge = "root:edge-provider";
  await createWorkspace(e2e.kcp.admin, edge, { shard: "shard-1" });
  // A rule's dependent must be a type its own workspace exports: the edge provider exports network.test.io too.
  await apply(e2e.kcp.ws(edge), readFileSync(path.join(REPO_ROOT, "test/fixtures/network-provider.yaml"), "utf8"));
  await apply(e2e.kcp.ws(edge), depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(e2e.kcp.ws(edge), EXPORT_NAME);
  // With a binding on shard-1, the dep-ctrl export gains a second virtual-workspace endpoint.
  const urls = await waitFor("a virtual-workspace endpoint per shard", async () => {
    const slices = await e2e.kcp.ws(PATHS.depCtrl).listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
    const u = endpointUrls(slices.items, EXPORT_NAME);
    return u.length === 2 ? u : undefined;
  });
  assert.equal(new Set(urls.map((u) => new URL(u).port)).size, 2, `one endpoint per shard: ${urls.join(", ")}`);
  const rule = dependencyRule("subnet-dependencies", [{ resource: "vpcs", path: PATHS.network }], {
    dependent: { group: "network.test.io", kind: "Subnet", resource: "subnets" },
  });
  await apply(e2e.kcp.ws(edge), [rule]);

  // The controller reached it through shard-1's virtual-workspace endpoint: it wrote the rule's status there.
  await waitFor(
    "the controller to report the shard-1 rule Ready",
    async () => {
      const r = await e2e.kcp
        .ws(edge)
        .get<{ status?: { conditions?: { type: string; status: string }[] } }>(`${RULES}/subnet-dependencies`);
      return r.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") || undefined;
    },
    { timeoutMs: 90_000 },
  );
  // The webhook registered it: a VPC named by a Subnet is now protected, on both shards.
  for (const { ws } of consumers()) {
    await create(ws, vpc("net-vpc"), {
      apiVersion: "network.test.io/v1",
      kind: "Subnet",
      metadata: { name: "net-subnet", namespace: "default" },
      spec: { vpcRef: { name: "net-vpc" } },
    });
    await waitForProtection(ws, `${at(VPCS)}/net-vpc`, true);
    assertDenied(
      await tryDelete(ws, `${at(VPCS)}/net-vpc`),
      /cannot delete vpcs\/net-vpc: still referenced by Subnet\/net-subnet$/,
    );
  }
});
