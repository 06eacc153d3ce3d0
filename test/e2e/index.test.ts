// The dependents index on a real kcp, with only the providers' consent (deploy/rbac/provider-index.yaml) and no grant
// on any shard: the webhook cannot read a consumer workspace directly, DELETEs are decided from the index, and a
// provider that revokes its consent loses protection of what its rules protect, and nobody else does. consumer1 and
// the network provider act with their own ServiceAccount tokens (kcp.md §9); kcp-admin only set the topology up and
// the operator restarts the webhook.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { RestClient } from "../../src/kcp/rest.ts";
import { apply } from "../../tools/kcp/api.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { startKcp } from "../../tools/kcp/harness.ts";
import { IDENTITIES, PATHS, TOKENS, scrapeSeries, waitReady } from "../../tools/kcp/topology.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { consentToIndex, tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import {
  RULES,
  SUBNETS,
  VPCS,
  VMS,
  assertDenied,
  at,
  create,
  e2eSuite,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
} from "./helpers.ts";

const e2e = e2eSuite(() => startKcp({ tokens: TOKENS }), { lookup: "index" });
const owners = new Map<string, Tenant>();
// Made once, at the first test: node runs root-level before hooks side by side, so kcp may not be up in one yet.
beforeEach(async () => {
  if (owners.size > 0) return;
  for (const p of [PATHS.consumer1, PATHS.network]) owners.set(p, await tenant(e2e.kcp, p, { name: "index-owner" }));
});
const owner = (p: string) => owners.get(p) ?? assert.fail(`no tenant for ${p}`);
const consumer1 = () => owner(PATHS.consumer1).client;
const network = () => owner(PATHS.network).client;

/** A subnet in the network provider's API that names its VPC. */
const subnetIn = (name: string, vpcName: string) => ({
  apiVersion: "network.test.io/v1",
  kind: "Subnet",
  metadata: { name, namespace: "default" },
  spec: { vpcRef: { name: vpcName } },
});

/** The network provider's own rule: its Subnets depend on the VPC they name. */
const SUBNET_RULE = dependencyRule("subnet-needs-vpc", [{ path: PATHS.network, resource: "vpcs" }], {
  dependent: { group: "network.test.io", kind: "Subnet", resource: "subnets" },
});

/** Waits for the network rule's condition `type` to have `status` and a message matching `message`. */
async function ruleCondition(type: string, status: string, message: RegExp): Promise<void> {
  type WithStatus = { status?: { conditions?: { type: string; status: string; message: string }[] } };
  await waitFor(
    `rule subnet-needs-vpc: ${type}=${status} ${message}`,
    async () => {
      const r = await network().get<WithStatus>(`${RULES}/subnet-needs-vpc`);
      const c = r.status?.conditions?.find((x) => x.type === type);
      return c?.status === status && message.test(c.message) ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
}

test("the webhook decides from the index with no read grant on consumer workspaces", async () => {
  await create(consumer1(), vpc("indexed-vpc"), vm("indexed-vm", { vpc: "indexed-vpc" }), vpc("unused-vpc"));
  await waitForProtection(consumer1(), `${at(VPCS)}/indexed-vpc`, true);
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/indexed-vpc`),
    /cannot delete vpcs\/indexed-vpc: still referenced by VirtualMachine\/indexed-vm$/,
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/unused-vpc`), { allowed: true });
  // Before denying, the webhook read the VM again through the export's virtual workspace (the provider's consent
  // covers that GET): kept, and no read failed.
  const webhook = e2e.bins.webhook;
  assert.ok(webhook);
  const confirmations = (result: string) =>
    scrapeSeries(webhook, `dependency_webhook_index_confirmations_total{result="${result}"}`);
  assert.ok(((await confirmations("kept")) ?? 0) >= 1);
  assert.equal(await confirmations("error"), 0);
  // The sequential "delete the VM, then the VPC" is allowed at once, whatever the index's watch delay.
  assert.deepEqual(await tryDelete(consumer1(), `${at(VMS)}/indexed-vm`), { allowed: true });
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/indexed-vpc`), { allowed: true });
  // The webhook's identity reads nothing of the consumer workspace itself: not its VMs, not its Secrets.
  const asWebhook = new RestClient(`${e2e.kcp.baseUrl}/clusters/${e2e.topo.clusters.consumer1}`, {
    ca: e2e.kcp.caPem,
    headers: async () => ({ authorization: `Bearer ${IDENTITIES.webhook.token}` }),
  });
  for (const p of ["/api/v1/secrets", at(VPCS).replace("/namespaces/default", "")]) {
    const err = await asWebhook.get(p).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.match(String(err), /403 Forbidden/, `the webhook identity can read ${p} in a consumer workspace`);
  }
});

test("a provider's revoked consent refuses only the DELETEs its rules protect, with a message that says so", async () => {
  await apply(network(), [SUBNET_RULE]);
  await create(
    consumer1(),
    vpc("net-vpc"),
    subnetIn("net-subnet", "net-vpc"),
    vpc("vm-vpc"),
    vm("vm-on-subnet", { vpc: "vm-vpc", subnet: "vm-subnet" }),
    subnetIn("vm-subnet", "vm-vpc"),
    subnetIn("free-subnet", "vm-vpc"),
  );
  await waitForProtection(consumer1(), `${at(VPCS)}/net-vpc`, true);
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/net-vpc`, { dryRun: true }),
    /still referenced by Subnet\/net-subnet$/,
  );
  await ruleCondition("DependentsIndexed", "True", /the webhook indexes subnets\.network\.test\.io/);

  // The network provider withdraws its consent. An open watch keeps streaming until it is reopened (documented in
  // docs/operations.md), so the operator restarts the webhook: it must come up ready and decide what it still may.
  const binding = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kcp-dependency-webhook-index-network.test.io";
  await network().request("DELETE", binding);
  await e2e.bins.webhook?.proc.stop();
  const webhook = await e2e.bins.startWebhook({ waitReady: false });
  await waitReady("webhook", webhook, 120_000);

  // VPCs are protected by the network provider's rule (Subnets name them): refused, 503, saying why, naming no
  // workspace, path, rule or dependent type (the index that fails is the network provider's, of Subnets).
  const refused = await waitFor("a VPC delete refused for the unreadable index", async () => {
    const r = await tryDelete(consumer1(), `${at(VPCS)}/net-vpc`, { dryRun: true });
    return !r.allowed && r.status === 503 ? r : undefined;
  });
  assert.ok(!refused.allowed);
  assert.match(
    refused.message,
    /cannot check dependents of vpcs\/net-vpc yet: the dependents index is not readable, retry in a few seconds/,
  );
  for (const secret of [PATHS.network, e2e.topo.clusters.network, "subnet-needs-vpc", "subnets"])
    assert.ok(!refused.message.includes(secret), `the message names ${secret}: ${refused.message}`);
  // kcp's own text around the message may carry a port such as :40339, so the status code is matched as a number.
  assert.doesNotMatch(refused.message, /(^|[^0-9])403([^0-9]|$)/, `the message names kcp's 403: ${refused.message}`);
  // Subnets are protected only by the compute provider's rule (VMs name them), whose consent stands: decided.
  assertDenied(
    await tryDelete(consumer1(), `${at(SUBNETS)}/vm-subnet`),
    /cannot delete subnets\/vm-subnet: still referenced by VirtualMachine\/vm-on-subnet$/,
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(SUBNETS)}/free-subnet`), { allowed: true });

  // The provider sees it on its rule: not Ready, and which RBAC is missing.
  await ruleCondition("DependentsIndexed", "False", /apply deploy\/rbac\/provider-index\.yaml in this workspace/);
  await ruleCondition("Ready", "False", /DependentsIndexed/);

  // Consent given again: protection returns without a restart (the watch retries).
  await consentToIndex(network(), "network.test.io");
  await waitForProtection(consumer1(), `${at(VPCS)}/net-vpc`, true, 120_000);
  await ruleCondition("Ready", "True", /installed/);
  await network().request("DELETE", `${RULES}/subnet-needs-vpc`);
});
