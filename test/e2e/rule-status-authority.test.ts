// A DependencyRule's status is the controller's alone, enforced by kcp: the dep-ctrl export's maximal permission
// policy (deploy/kcp/apiexport.yaml) with its ClusterRole (deploy/kcp/maximal-permission-policy.yaml) lets a provider
// that owns its workspace create, update and delete its rules but refuses its status writes with 403, while the
// controller, through the export's virtual workspace, still writes status and the rule becomes Ready. The provider
// acts with a ServiceAccount token scoped to its own workspace (tools/kcp/tenant.ts), as a real provider does.
// The last test takes the policy off the export and sees the same write go through: the 403 is the policy's.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Condition } from "../../src/api/types.ts";
import { isApiError, type RestClient } from "../../src/kcp/rest.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import { EXPORT_NAME, PATHS } from "../../tools/kcp/topology.ts";
import { RULES, e2eSuite } from "./helpers.ts";

const e2e = e2eSuite();
const NAME = "tenant-vm-rule";

interface Rule {
  metadata: { name: string; generation?: number; resourceVersion?: string; labels?: Record<string, string> };
  spec: { dependencies: unknown[] };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

let provider: Tenant | undefined;
/** The compute provider's own identity: a ServiceAccount bound to cluster-admin in its workspace, nothing more. */
async function computeProvider(): Promise<Tenant> {
  provider ??= await tenant(e2e.kcp, PATHS.compute, { name: "compute-owner" });
  return provider;
}

/** The outcome of a request: its status code (2xx as 200) and kcp's message. */
async function outcome(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
    return { status: 200, message: "" };
  } catch (err) {
    if (isApiError(err)) return { status: err.status, message: err.statusMessage };
    throw err;
  }
}

/** What a provider forging its rule's status would send: Ready=True for a reason of its own. */
function forgedStatus(): { status: Rule["status"] } {
  const forged = { type: "Ready", status: "True", reason: "Forged", message: "forged by the provider" };
  return { status: { conditions: [{ ...forged, lastTransitionTime: new Date().toISOString() } as Condition] } };
}

const patchStatus = (ws: RestClient, name: string): Promise<unknown> =>
  ws.request("PATCH", `${RULES}/${name}/status`, {
    body: forgedStatus(),
    contentType: "application/merge-patch+json",
  });

/** Waits until the controller has written status for the rule's current generation, and returns the rule. */
async function waitReady(ws: RestClient, name: string): Promise<Rule> {
  return waitFor(
    `rule ${name}: Ready=True for its current generation`,
    async () => {
      const r = await ws.get<Rule>(`${RULES}/${name}`);
      const ready = r.status?.conditions?.find((c) => c.type === "Ready");
      const current = r.status?.observedGeneration === r.metadata.generation;
      return current && ready?.status === "True" && ready.reason !== "Forged" ? r : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
}

test("the provider's token is its own workspace's: it is the ServiceAccount there and has no access elsewhere", async () => {
  const p = await computeProvider();
  const review = await p.client.request<{
    status: { userInfo: { username: string; extra?: Record<string, string[]> } };
  }>("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  assert.equal(review.status.userInfo.username, "system:serviceaccount:default:compute-owner");
  assert.deepEqual(review.status.userInfo.extra?.["authentication.kcp.io/scopes"], [
    `cluster:${e2e.topo.clusters.compute}`,
  ]);
  const elsewhere = p.client.withBase(`${e2e.kcp.baseUrl}/clusters/${PATHS.network}`);
  const o = await outcome(elsewhere.get(RULES));
  assert.ok(o.status === 401 || o.status === 403, `the network provider's rules with the compute token: ${o.status}`);
});

test("the provider creates and updates its rule, and the controller writes its status: Ready", async () => {
  const ws = (await computeProvider()).client;
  await ws.request("POST", RULES, { body: dependencyRule(NAME, [{ resource: "vpcs", path: PATHS.network }]) });
  const first = await waitReady(ws, NAME);
  assert.equal(first.metadata.generation, 1);

  // update (PUT) and patch: the rule gains a dependency on subnets and a label.
  first.spec.dependencies = (
    dependencyRule(NAME, [
      { resource: "vpcs", path: PATHS.network },
      { resource: "subnets", path: PATHS.network },
    ]) as unknown as Rule
  ).spec.dependencies;
  await ws.request("PUT", `${RULES}/${NAME}`, { body: first });
  await ws.request("PATCH", `${RULES}/${NAME}`, {
    body: { metadata: { labels: { team: "compute" } } },
    contentType: "application/merge-patch+json",
  });
  const second = await waitReady(ws, NAME);
  assert.equal(second.metadata.generation, 2, "the update changed the spec");
  assert.equal(second.status?.observedGeneration, 2, "the controller wrote status for the updated rule");
  assert.equal(second.metadata.labels?.["team"], "compute");
});

test("the provider's status writes are refused 403, and the status stays the controller's", async () => {
  const ws = (await computeProvider()).client;
  const before = await waitReady(ws, NAME);
  const patched = await outcome(patchStatus(ws, NAME));
  assert.equal(patched.status, 403, patched.message);
  assert.match(patched.message, /dependencyrules\/status/);
  const put = await outcome(ws.request("PUT", `${RULES}/${NAME}/status`, { body: { ...before, ...forgedStatus() } }));
  assert.equal(put.status, 403, put.message);

  // The same bound holds for kcp-admin: only system:masters and the virtual workspace are outside it.
  const admin = await outcome(patchStatus(e2e.kcp.ws(PATHS.compute), NAME));
  assert.equal(admin.status, 403, admin.message);

  const after = await ws.get<Rule>(`${RULES}/${NAME}`);
  assert.deepEqual(after.status, before.status);
});

test("the provider deletes its rule", async () => {
  const ws = (await computeProvider()).client;
  await ws.request("DELETE", `${RULES}/${NAME}`);
  await waitFor(
    `rule ${NAME} gone`,
    async () => (await ws.getOptional(`${RULES}/${NAME}`)) === undefined || undefined,
    {
      timeoutMs: 60_000,
    },
  );
});

test("without the export's maximal permission policy the same status write goes through", async () => {
  const ws = (await computeProvider()).client;
  const depCtrl = e2e.kcp.ws(PATHS.depCtrl);
  const exportPath = `/apis/apis.kcp.io/v1alpha2/apiexports/${EXPORT_NAME}`;
  const setPolicy = (policy: { local: object } | null): Promise<unknown> =>
    depCtrl.request("PATCH", exportPath, {
      body: { spec: { maximalPermissionPolicy: policy } },
      contentType: "application/merge-patch+json",
    });
  await setPolicy(null);
  try {
    // kcp's authorizer reads the export from an informer: the write is allowed once it has seen the change.
    await waitFor(
      "the provider's status patch of vm-dependencies to be accepted",
      async () => (await outcome(patchStatus(ws, "vm-dependencies"))).status === 200 || undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  } finally {
    await setPolicy({ local: {} });
  }
  await waitFor(
    "the provider's status patch to be refused again",
    async () => (await outcome(patchStatus(ws, "vm-dependencies"))).status === 403 || undefined,
    { timeoutMs: 60_000, intervalMs: 500 },
  );
});
