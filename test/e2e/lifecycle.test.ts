// Teardown and outages on a real kcp: namespaces and whole workspaces full of protected objects still delete, the
// webhook fails closed while it starts or is down, and restarting the controller changes nothing.
// The consumers and providers act with their own ServiceAccount tokens (kcp.md §9), never kcp-admin; kcp-admin stays
// for the operator's acts only: creating and deleting workspaces, the webhook's identity and its grants in dep-ctrl and
// on the shards, running and killing the binaries, and reading what the product installed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, createWorkspace, deleteWorkspace, waitForBinding } from "../../tools/kcp/api.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { bindGrant, consentToIndex } from "../../tools/kcp/tenant.ts";
import {
  IDENTITIES,
  PATHS,
  PROVIDER_EXPORTS,
  RBAC_VARS,
  scrapeCounter,
  scrapeSeries,
  waitIndexed,
  waitReady,
} from "../../tools/kcp/topology.ts";
import {
  VMS,
  VPCS,
  VWC_PATH,
  assertDenied,
  at,
  create,
  e2eSuite,
  exists,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";

const e2e = e2eSuite();
/** consumer1's own client (its tenant's token). */
const consumer1 = async (): Promise<RestClient> => (await e2e.tenant(PATHS.consumer1)).client;
const namespace = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });

/** How long a teardown may take: kcp's namespace controller retries a refused delete with a short backoff. */
const TEARDOWN_BOUND_MS = 180_000;

async function waitGone(ws: RestClient, path: string, what: string): Promise<void> {
  await waitFor(`${what} to be gone`, async () => !(await exists(ws, path)) || undefined, {
    timeoutMs: TEARDOWN_BOUND_MS,
    intervalMs: 1000,
  });
}

test("10a. deleting a namespace holding VMs and the VPCs they reference finishes", async () => {
  const c1 = await consumer1();
  await create(c1, namespace("teardown"));
  for (let i = 0; i < 3; i++) {
    await create(c1, vpc(`t-vpc-${i}`, "teardown"), vm(`t-vm-${i}`, { vpc: `t-vpc-${i}` }, "teardown"));
  }
  await waitForVwc(e2e.kcp, true);
  await waitForProtection(c1, `${at(VPCS, "teardown")}/t-vpc-0`, true);

  const started = Date.now();
  await c1.request("DELETE", "/api/v1/namespaces/teardown");
  await waitGone(c1, "/api/v1/namespaces/teardown", "namespace teardown");
  process.stderr.write(`# namespace with 3 VPC/VM pairs deleted in ${Date.now() - started} ms\n`);
});

test("10b. a VM in another namespace does not hold up the teardown of a namespace whose VPC it names", async () => {
  const c1 = await consumer1();
  // Names in a namespaced reference resolve in the dependent's own namespace (like Kubernetes object references),
  // so app-b's VM naming "a-vpc" refers to app-b/a-vpc, not to net-a/a-vpc.
  await create(c1, namespace("net-a"), namespace("app-b"));
  await create(c1, vpc("a-vpc", "net-a"), vm("b-vm", { vpc: "a-vpc" }, "app-b"));
  assert.deepEqual(await tryDelete(c1, `${at(VPCS, "net-a")}/a-vpc`, { dryRun: true }), { allowed: true });
  await c1.request("DELETE", "/api/v1/namespaces/net-a");
  await waitGone(c1, "/api/v1/namespaces/net-a", "namespace net-a");
  assert.ok(await exists(c1, `${at(VMS, "app-b")}/b-vm`), "the VM in app-b is untouched");
});

test("10c. deleting a whole consumer workspace with protected objects completes", async () => {
  const wsPath = "root:consumer3";
  // The operator makes the workspace and hands its owner a token; the providers open their exports to all, each
  // with its own token; the consumer binds them and fills its workspace with its own.
  await createWorkspace(e2e.kcp.admin, wsPath);
  for (const p of PROVIDER_EXPORTS) await apply((await e2e.tenant(p.path)).client, bindGrant(p.exportName));
  const ws = (await e2e.tenant(wsPath)).client;
  await apply(ws, readFileSync(path.join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8"), e2e.topo.vars);
  await waitForBinding(ws, "network.test.io");
  await waitForBinding(ws, "compute.test.io");
  await create(ws, vpc("doomed-vpc"), vm("doomed-vm", { vpc: "doomed-vpc" }));
  await waitForProtection(ws, `${at(VPCS)}/doomed-vpc`, true);

  // The Workspace object lives in root, out of the tenant's reach: deleting it is the operator's act (kcp-admin).
  await deleteWorkspace(e2e.kcp.admin, wsPath);
  await waitGone(e2e.kcp.ws("root"), "/apis/tenancy.kcp.io/v1alpha1/workspaces/consumer3", "workspace root:consumer3");
});

test("11a. restarting the controller changes nothing", async () => {
  await waitForVwc(e2e.kcp, true);
  const before = await e2e.kcp.ws(PATHS.network).get<{ metadata: { resourceVersion: string } }>(VWC_PATH);
  await e2e.bins.controller?.proc.stop();
  const controller = await e2e.bins.startController();
  // A level-triggered controller finds nothing to write: its first complete pass as leader (counted, not waited out)
  // writes no webhook configuration. Rule statuses are not counted here: one run saw one status write in that pass
  // right after the deletions above (cause not investigated; the earlier tests may leave a status change in flight).
  await waitFor(
    "the new controller's first complete pass",
    async () => ((await scrapeSeries(controller, 'dependency_controller_reconciles_total{result="success"}')) ?? 0) > 0,
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  assert.equal(await scrapeCounter(controller, "dependency_controller_webhook_configuration_writes_total"), 0);
  const after = await e2e.kcp.ws(PATHS.network).get<{ metadata: { resourceVersion: string } }>(VWC_PATH);
  assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
});

test("11b. with the webhook killed, protected deletes fail closed and unprotected types are unaffected", async () => {
  const c1 = await consumer1();
  await create(c1, vpc("outage-vpc"), vpc("free-vpc"), vm("outage-vm", { vpc: "outage-vpc" }), vm("lone-vm", {}));
  await waitForProtection(c1, `${at(VPCS)}/outage-vpc`, true);
  e2e.bins.webhook?.proc.killGroup("SIGKILL");
  await e2e.bins.webhook?.proc.wait();

  const refused = await tryDelete(c1, `${at(VPCS)}/free-vpc`);
  assert.equal(refused.allowed, false, "an unreferenced VPC cannot be deleted while nobody can check it");
  if (!refused.allowed)
    assert.match(refused.message, /failed calling webhook "dependency-controller\.dependencies\.opendefense\.cloud"/);
  assert.ok(await exists(c1, `${at(VPCS)}/free-vpc`));
  // VirtualMachines are not protected by any rule: their deletes never reach the webhook.
  assert.deepEqual(await tryDelete(c1, `${at(VMS)}/lone-vm`), { allowed: true });
});

test("11c. a starting webhook denies every delete until its rule registry is synced, then decides normally", async () => {
  const c1 = await consumer1();
  // A webhook whose identity may find the export's endpoints but not yet read the rules stays in its starting phase
  // for as long as we like; a fresh identity avoids kcp's cached authorization decisions for the usual one.
  const standby = IDENTITIES.standbyWebhook;
  const depCtrl = e2e.kcp.ws(PATHS.depCtrl);
  await apply(depCtrl, [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "standby-discovery" },
      rules: [
        { apiGroups: ["apis.kcp.io"], resources: ["apiexportendpointslices"], verbs: ["get", "list", "watch"] },
        { nonResourceURLs: ["/"], verbs: ["access"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "standby-discovery" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "standby-discovery" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: standby.user }],
    },
  ]);
  const webhook = await e2e.bins.startWebhook({ waitReady: false, identity: standby });
  const starting = await waitFor(
    "a delete refused because the webhook is starting",
    async () => {
      const r = await tryDelete(c1, `${at(VPCS)}/free-vpc`, { dryRun: true });
      return !r.allowed && /starting/.test(r.message) ? r : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  assert.match(starting.message, /dependency webhook is starting: rule registry not yet synced, retry later/);
  assert.ok(await exists(c1, `${at(VPCS)}/free-vpc`));

  // The operator grants the standby identity the webhook's bootstrap RBAC, exactly as deploy/rbac/ defines it.
  const vars = { ...RBAC_VARS, WEBHOOK_USER: standby.user };
  await apply(depCtrl, readFileSync(path.join(REPO_ROOT, "deploy/rbac/dep-ctrl-workspace.yaml"), "utf8"), vars);
  // Its read grant: the providers' consent to the index (each with its own token), or the operator's per-shard grant
  // of live lookups.
  if (e2e.bins.lookup === "index")
    for (const p of PROVIDER_EXPORTS)
      await consentToIndex((await e2e.tenant(p.path)).client, p.exportName, standby.user);
  else
    for (const shardAdmin of e2e.kcp.shardAdmins) {
      await apply(
        shardAdmin.forCluster("system:admin"),
        readFileSync(path.join(REPO_ROOT, "deploy/rbac/system-admin.yaml"), "utf8"),
        vars,
      );
    }
  await waitReady("webhook", webhook, 120_000);
  // Ready means the rules are synced; the index of VMs (read with the grant just given) may still be listing, and
  // until it is, a delete it covers gets a 503 "still syncing" (index.test.ts covers that answer).
  if (e2e.bins.lookup === "index") await waitIndexed("webhook", webhook, 120_000);
  assert.deepEqual(await tryDelete(c1, `${at(VPCS)}/free-vpc`), { allowed: true });
  assertDenied(await tryDelete(c1, `${at(VPCS)}/outage-vpc`), /still referenced by VirtualMachine\/outage-vm$/);
});
