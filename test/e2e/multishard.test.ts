// Scenario 12: the same product on a two-shard kcp, through the front-proxy. Providers and consumer1 live on the root
// shard, consumer2 on shard-1; the webhook's lookup RBAC is applied to each shard's system:admin directly; and a rule
// that lives in a workspace on shard-1 is seen by both binaries (one virtual-workspace endpoint per shard). Then
// shard-1 stops answering (SIGSTOP): the webhook stays ready and decides with the root shard's rules. Before the
// rule on shard-1, a vault provider on root protects the Secrets of a consumer on shard-1 (local targets), which the
// controller reaches through root's Shards, the dep-ctrl export being bound on the root shard only.
// The providers and consumers act with their own ServiceAccount tokens (kcp.md §9), never kcp-admin; kcp-admin stays
// for the operator's acts: creating workspaces, letting providers bind the dep-ctrl export, reading the export's
// endpoint slices and stopping a shard.
import { readFileSync } from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { test } from "node:test";
import { apiBinding, apply, createWorkspace, waitForBinding } from "../../tools/kcp/api.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { startShardedKcp } from "../../tools/kcp/sharded.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { localConfigurationName } from "../../src/controller/local-targets.ts";
import { ENDPOINT_SLICES_PATH, endpointUrls, type APIExportEndpointSlice } from "../../src/kcp/virtualworkspace.ts";
import { bindGrant, consentToIndex } from "../../tools/kcp/tenant.ts";
import { EXPORT_NAME, PATHS, TOKENS, depCtrlBinding, vmRule } from "../../tools/kcp/topology.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import {
  RULES,
  SUBNETS,
  VPCS,
  assertDenied,
  at,
  create,
  e2eSuite,
  exportedKind,
  subnet,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";
import {
  SECRETS,
  VAULT_GROUP,
  bindVault,
  grantLocalTargets,
  vaultApi,
  vaultObjects,
  vaultRule,
} from "./local-targets.ts";

/** The edge provider's API: Gateways, each naming the VPC it serves. */
const GATEWAY_API = exportedKind({
  group: "edge.test.io",
  kind: "Gateway",
  plural: "gateways",
  specProperties: { vpcRef: { type: "object", properties: { name: { type: "string" } } } },
});

const e2e = e2eSuite(() => startShardedKcp({ tokens: TOKENS }), {
  placement: { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" },
});
/** The two consumers, each with its own client (its tenant's token). */
const consumers = async () => [
  { name: "consumer1 (root shard)", ws: (await e2e.tenant(PATHS.consumer1)).client },
  { name: "consumer2 (shard-1)", ws: (await e2e.tenant(PATHS.consumer2)).client },
];

test("12. the controller installs the webhook configuration in the provider on the root shard", async () => {
  await waitForVwc(e2e.kcp, true, 120_000);
});

test("12/2. a referenced VPC is protected on both shards", async () => {
  for (const { name, ws } of await consumers()) {
    await create(ws, vpc("my-vpc"), vm("my-vm", { vpc: "my-vpc" }));
    await waitForProtection(ws, `${at(VPCS)}/my-vpc`, true);
    const outcome = await tryDelete(ws, `${at(VPCS)}/my-vpc`);
    assertDenied(outcome, /cannot delete vpcs\/my-vpc: still referenced by VirtualMachine\/my-vm$/);
    assert.ok(!outcome.allowed, name);
  }
});

test("12/4. a same-named VPC without VMs deletes freely, whichever shard holds the VM", async () => {
  const [c1, c2] = await consumers();
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
  const compute = (await e2e.tenant(PATHS.compute)).client;
  await compute.request("DELETE", `${RULES}/vm-dependencies`);
  await waitForVwc(e2e.kcp, false);
  for (const { ws } of await consumers()) await waitForProtection(ws, `${at(VPCS)}/my-vpc`, false);
  await apply(compute, vmRule(e2e.topo.vars));
  await waitForVwc(e2e.kcp, true);
  for (const { ws } of await consumers()) {
    await waitForProtection(ws, `${at(VPCS)}/my-vpc`, true);
    assertDenied(await tryDelete(ws, `${at(VPCS)}/my-vpc`), /still referenced by VirtualMachine\/my-vm$/);
  }
});

/** A rule's status conditions, as its provider reads them. */
type RuleStatus = { status?: { conditions?: { type: string; status: string; message?: string }[] } };

test("12/local targets on shard-1: a consumer on a shard where no provider binds dep-ctrl gets its configuration, counted", async () => {
  // Until the next case no provider binds the dep-ctrl export on shard-1, so its endpoint slice lists the root shard
  // only: the controller reaches shard-1 through root's Shards (workspace-resolution.yaml lets it list them). Before,
  // it visited the slice's shards alone and this consumer got no configuration and was not counted (0 of 0).
  const vault = "root:vault-provider";
  const where = "root:vault-consumer";
  const cluster = await createWorkspace(e2e.kcp.admin, vault, { shard: "root" });
  await createWorkspace(e2e.kcp.admin, where, { shard: "shard-1" });
  await apply(e2e.kcp.ws(PATHS.depCtrl), bindGrant(EXPORT_NAME));
  const provider = (await e2e.tenant(vault)).client;
  await apply(provider, vaultApi());
  await apply(provider, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider, EXPORT_NAME);
  await consentToIndex(provider, VAULT_GROUP);
  await grantLocalTargets(
    provider,
    readFileSync(path.join(REPO_ROOT, "deploy/rbac/provider-local-targets.yaml"), "utf8"),
  );
  await apply(provider, [vaultRule()]);
  const consumer = (await e2e.tenant(where)).client;
  await bindVault(consumer, vault, true);
  await waitForBinding(consumer, VAULT_GROUP);
  await create(consumer, ...vaultObjects());

  const configuration = `${WEBHOOK_CONFIGURATIONS_PATH}/${localConfigurationName({ cluster, exportName: VAULT_GROUP })}`;
  await waitFor(
    "dependency-controller-local-<id> in the consumer on shard-1",
    async () => (await consumer.getOptional(configuration)) !== undefined || undefined,
    { timeoutMs: 90_000, intervalMs: 500 },
  );
  let said = "no LocalTargetsProtected condition";
  await waitFor(
    "LocalTargetsProtected counting 1 of 1",
    async () => {
      const r = await provider.get<RuleStatus>(`${RULES}/endpoint-credentials`);
      const c = r.status?.conditions?.find((x) => x.type === "LocalTargetsProtected");
      if (c) said = `${c.status}: ${c.message ?? ""}`;
      return (c?.status === "True" && /in 1 of 1 consumer workspaces/.test(c.message ?? "")) || undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; the rule said ${said}`);
  });
  // What this case is about: the dep-ctrl export was (and is) still bound on the root shard only.
  const slices = await e2e.kcp.ws(PATHS.depCtrl).listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
  assert.equal(endpointUrls(slices.items, EXPORT_NAME).length, 1, "the dep-ctrl slice lists one shard");

  await waitForProtection(consumer, `${SECRETS}/held-secret`, true);
  assertDenied(
    await tryDelete(consumer, `${SECRETS}/held-secret`),
    /cannot delete secrets\/held-secret: still referenced by Endpoint\/e1$/,
  );
  assert.deepEqual(await tryDelete(consumer, `${SECRETS}/free-secret`), { allowed: true });

  // Cleanup: without the rule the controller prunes the configuration (through shard-1 again) and visits no more
  // shards for local targets, so the shard-1 stop below meets no local-target pass.
  await provider.request("DELETE", `${RULES}/endpoint-credentials`);
  await waitFor(
    "dependency-controller-local-<id> pruned from the consumer on shard-1",
    async () => (await consumer.getOptional(configuration)) === undefined || undefined,
    { timeoutMs: 90_000, intervalMs: 500 },
  );
});

test("12/rule on shard-1: a rule in a provider workspace on shard-1 is seen by the controller and the webhook", async () => {
  const edge = "root:edge-provider";
  await createWorkspace(e2e.kcp.admin, edge, { shard: "shard-1" });
  // The operator offers the dep-ctrl export to every provider; the edge provider does the rest with its own token.
  await apply(e2e.kcp.ws(PATHS.depCtrl), bindGrant(EXPORT_NAME));
  const provider = (await e2e.tenant(edge)).client;
  // A rule's dependent must be a type its own workspace exports, and the index reads it through that export: the edge
  // provider exports Gateways (which name a VPC), open to any consumer, and both consumers bind them.
  await apply(provider, [...GATEWAY_API, ...bindGrant("edge.test.io")]);
  await apply(provider, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider, EXPORT_NAME);
  await consentToIndex(provider, "edge.test.io");
  for (const { ws } of await consumers()) {
    await apply(ws, [apiBinding("edge.test.io", edge)]);
    await waitForBinding(ws, "edge.test.io");
  }
  // With a binding on shard-1, the dep-ctrl export gains a second virtual-workspace endpoint.
  const urls = await waitFor("a virtual-workspace endpoint per shard", async () => {
    const slices = await e2e.kcp.ws(PATHS.depCtrl).listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
    const u = endpointUrls(slices.items, EXPORT_NAME);
    return u.length === 2 ? u : undefined;
  });
  assert.equal(new Set(urls.map((u) => new URL(u).port)).size, 2, `one endpoint per shard: ${urls.join(", ")}`);
  const rule = dependencyRule("gateway-dependencies", [{ resource: "vpcs", path: PATHS.network }], {
    dependent: { group: "edge.test.io", kind: "Gateway", resource: "gateways" },
  });
  await apply(provider, [rule]);

  // The controller reached it through shard-1's virtual-workspace endpoint: it wrote the rule's status there.
  await waitFor(
    "the controller to report the shard-1 rule Ready",
    async () => {
      const r = await provider.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `${RULES}/gateway-dependencies`,
      );
      return r.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") || undefined;
    },
    { timeoutMs: 90_000 },
  );
  // The webhook registered it: a VPC named by a Subnet is now protected, on both shards.
  for (const { ws } of await consumers()) {
    await create(ws, vpc("net-vpc"), {
      apiVersion: "edge.test.io/v1",
      kind: "Gateway",
      metadata: { name: "net-gateway", namespace: "default" },
      spec: { vpcRef: { name: "net-vpc" } },
    });
    await waitForProtection(ws, `${at(VPCS)}/net-vpc`, true);
    assertDenied(
      await tryDelete(ws, `${at(VPCS)}/net-vpc`),
      /cannot delete vpcs\/net-vpc: still referenced by Gateway\/net-gateway$/,
    );
  }
});

test("12/shard-1 stopped: the webhook stays ready, decides with the root shard's rules, refuses only what shard-1's rules may decide", async () => {
  const [c1, c2] = await consumers();
  assert.ok(c1 && c2);
  const webhook = e2e.bins.webhook;
  assert.ok(webhook);
  const readyz = async (): Promise<number> => (await fetch(`${webhook.healthUrl}/readyz`)).status;
  const webhookLog = (): string => readFileSync(webhook.proc.logFile, "utf8");
  // In consumer1 (root shard): a subnet a VM names, and one nobody names. Subnets are protected only by the VM rule,
  // which lives in the compute provider on the root shard. VPCs are protected by it and by the Gateway rule of the
  // edge provider on shard-1 (test above).
  await create(c1.ws, subnet("stop-used"), vm("stop-vm", { subnet: "stop-used" }), subnet("stop-free-1"));
  await create(c1.ws, subnet("stop-free-2"));
  await waitForProtection(c1.ws, `${at(SUBNETS)}/stop-used`, true);
  assert.equal(await readyz(), 200);

  const pid = e2e.kcp.shardPid(1);
  const logBefore = webhookLog().length;
  process.kill(pid, "SIGSTOP");
  try {
    // The rule watch on shard-1 goes silent; the watchdog drops it after 60 s + 15 s, and 5 s later the webhook
    // counts shard-1's rules as unseen.
    await waitFor(
      "the webhook to report shard-1's rule endpoint as failing",
      async () => /cannot list or watch DependencyRules/.test(webhookLog().slice(logBefore)) || undefined,
      { timeoutMs: 150_000, intervalMs: 1000 },
    );
    assert.equal(await readyz(), 200, "still ready with one shard unseen");
    // Both lookup modes: the dependents index answers for consumer1 from the root shard's endpoint alone.
    assertDenied(
      await tryDelete(c1.ws, `${at(SUBNETS)}/stop-used`),
      /cannot delete subnets\/stop-used: still referenced by VirtualMachine\/stop-vm$/,
    );
    assert.deepEqual(await tryDelete(c1.ws, `${at(SUBNETS)}/stop-free-1`), { allowed: true });
    // A rule for VPCs lives on shard-1: the webhook cannot know whether it changed, so it refuses, naming nothing.
    const vpcDelete = await tryDelete(c1.ws, `${at(VPCS)}/my-vpc`);
    assert.equal(vpcDelete.allowed, false);
    if (!vpcDelete.allowed) {
      assert.equal(vpcDelete.status, 503, vpcDelete.message);
      // What the webhook said (kcp's client error starts with the request URL).
      const said = vpcDelete.message.slice(vpcDelete.message.indexOf("denied the request: "));
      assert.match(
        said,
        /cannot check vpcs\/my-vpc: a dependency rule for vpcs is on a kcp shard the webhook cannot reach/,
      );
      assert.doesNotMatch(said, /6445|https:|edge|gateway|services\/apiexport/);
    }
    assert.equal(await readyz(), 200);
  } finally {
    process.kill(pid, "SIGCONT");
  }

  await waitFor(
    "the webhook to see shard-1's rules again",
    async () => /DependencyRules on this endpoint in sync again/.test(webhookLog().slice(logBefore)) || undefined,
    { timeoutMs: 200_000, intervalMs: 1000 },
  );
  // A watch the watchdog dropped counts as failing until its replacement answers: the shard's first bookmark comes
  // 2 s before that watch's 60 s timeout, or a second drop 75 s after the first; so up to about two minutes.
  for (const { ws } of [c2, c1]) {
    await waitForProtection(ws, `${at(VPCS)}/my-vpc`, true, 180_000);
    assertDenied(await tryDelete(ws, `${at(VPCS)}/my-vpc`), /still referenced by VirtualMachine\/my-vm$/);
  }
  assertDenied(await tryDelete(c1.ws, `${at(SUBNETS)}/stop-used`), /still referenced by VirtualMachine\/stop-vm$/);
  assert.deepEqual(await tryDelete(c1.ws, `${at(SUBNETS)}/stop-free-2`), { allowed: true });
});
