// An installation coming from the Go original, as it stands: the product's own dep-ctrl manifests and bootstrap RBAC
// (what getting-started and the chart deploy), but the providers as the original's fixtures set them up: their
// APIBinding of the dep-ctrl export accepts only the webhook-configuration claim (none of our read-only claims), no
// provider applied our index consent (deploy/rbac/provider-index.yaml), and the webhook holds the original's
// per-shard read grant (its system-admin-rbac-bootstrap.yaml: ClusterRole dependency-controller-webhook, "*"/"*" get
// and list, in system:admin). The webhook runs with its default lookup (auto). It must protect from the first DELETE:
// a VPC a VM references is refused 409 naming the VM, a VPC nothing references is deleted, and the rule's status
// says live lookups protect it, from before the first DELETE (the webhook probes its live read access itself).
// The providers apply the original's manifests unchanged, and write and read their rule, with their own ServiceAccount
// tokens; the consumer binds, creates and deletes with its own (kcp.md §9). kcp-admin only does the platform
// operator's part: the workspaces, the dep-ctrl side, the shard grant, and letting providers bind the dep-ctrl export.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { apply, createWorkspace, parseYaml, waitForBinding, type KObject } from "../../tools/kcp/api.ts";
import { REPO_ROOT, startKcp, type Kcp } from "../../tools/kcp/harness.ts";
import { RULES } from "../../tools/kcp/objects.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { bindGrant, tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import { Binaries, EXPORT_NAME, PATHS, RBAC_VARS, scrapeSeries, TOKENS } from "../../tools/kcp/topology.ts";
import {
  assertDenied,
  at,
  create,
  exists,
  tryDelete,
  vm,
  vpc,
  VPCS,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";
import { readyRace } from "./ready-race.ts";

type Cond = { type: string; status: string; reason: string; message: string };

const file = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), "utf8");

/** The original's webhook identity: its ServiceAccount's user name and groups, as its kcp client certificate has them. */
const ORIGINAL_WEBHOOK = {
  token: "original-webhook-token",
  user: "system:serviceaccount:dependency-system:dependency-webhook",
  groups: ["system:serviceaccounts", "system:serviceaccounts:dependency-system"],
};
const VARS = { ...RBAC_VARS, WEBHOOK_USER: ORIGINAL_WEBHOOK.user };

/** The original's provider binding of the dep-ctrl export: the webhook-configuration claim, nothing else. */
const originalBinding = (depCtrlPath: string): KObject => ({
  apiVersion: "apis.kcp.io/v1alpha2",
  kind: "APIBinding",
  metadata: { name: EXPORT_NAME },
  spec: {
    reference: { export: { path: depCtrlPath, name: EXPORT_NAME } },
    permissionClaims: [
      {
        group: "admissionregistration.k8s.io",
        resource: "validatingwebhookconfigurations",
        verbs: ["get", "list", "watch", "create", "update", "delete"],
        selector: { matchAll: true },
        state: "Accepted",
      },
    ],
  },
});

/** The original's grant in each shard's system:admin, bound to our webhook identity (its subject is its own SA). */
const originalShardGrant = (user: string): KObject[] => [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "dependency-controller-webhook" },
    rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["get", "list"] }],
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "dependency-controller-webhook" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "dependency-controller-webhook" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  },
];

/** The original's newest rule shape (dependent.apiExportName, no enforcement), as its getting-started writes it. */
const originalRule: KObject = {
  apiVersion: "dependencies.opendefense.cloud/v1alpha1",
  kind: "DependencyRule",
  metadata: { name: "vm-dependencies" },
  spec: {
    dependent: {
      apiExportName: "compute.test.io",
      group: "compute.test.io",
      version: "v1",
      kind: "VirtualMachine",
      resource: "virtualmachines",
    },
    dependencies: [
      {
        apiExportRef: { path: PATHS.network, name: "network.test.io" },
        group: "network.test.io",
        version: "v1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      },
    ],
  },
};

/** The tenants of the setup, each acting with its own workspace-scoped token. */
interface Tenants {
  network: Tenant;
  compute: Tenant;
  consumer: Tenant;
}

/** Sets everything up: kcp-admin for the operator's part, each provider and the consumer with its own token. */
async function setUp(kcp: Kcp): Promise<Tenants> {
  for (const p of [PATHS.depCtrl, PATHS.network, PATHS.compute, PATHS.consumer1]) await createWorkspace(kcp.admin, p);
  // The product's side, as getting-started deploys it.
  await apply(kcp.ws(PATHS.depCtrl), file("deploy/kcp/maximal-permission-policy.yaml"));
  await apply(kcp.ws(PATHS.depCtrl), file("deploy/kcp/apiresourceschema.yaml"));
  await apply(kcp.ws(PATHS.depCtrl), file("deploy/kcp/apiexport.yaml"));
  await apply(kcp.ws(PATHS.depCtrl), file("deploy/rbac/dep-ctrl-workspace.yaml"), VARS);
  await apply(kcp.ws("root"), file("deploy/rbac/workspace-resolution.yaml"), VARS);
  // The operator lets tenants bind the dep-ctrl export: no manifest of the product or the original grants `bind` on it
  // (getting-started binds as kcp-admin), and a provider's own token may not bind without it.
  await apply(kcp.ws(PATHS.depCtrl), bindGrant(EXPORT_NAME));
  // The original's side: its shard grant (system:admin is the operator's), its provider bindings, no index consent.
  for (const shard of kcp.shardAdmins)
    await apply(shard.forCluster("system:admin"), originalShardGrant(ORIGINAL_WEBHOOK.user));
  const t: Tenants = {
    network: await tenant(kcp, PATHS.network, { name: "original-owner" }),
    compute: await tenant(kcp, PATHS.compute, { name: "original-owner" }),
    consumer: await tenant(kcp, PATHS.consumer1, { name: "original-owner" }),
  };
  // Each provider, with its own token: the original's fixture unchanged, its export open to consumers (a provider's own
  // RBAC beside the fixture, which grants no `bind`), and the original's binding of the dep-ctrl export.
  for (const [p, fixture, exportName] of [
    [t.network, "test/fixtures/network-provider.yaml", "network.test.io"],
    [t.compute, "test/fixtures/compute-provider.yaml", "compute.test.io"],
  ] as const) {
    await apply(p.client, file(fixture));
    await apply(p.client, bindGrant(exportName));
    await apply(p.client, [originalBinding(PATHS.depCtrl)]);
    await waitForBinding(p.client, EXPORT_NAME);
  }
  const vars = { NETWORK_PROVIDER_PATH: PATHS.network, COMPUTE_PROVIDER_PATH: PATHS.compute };
  await apply(t.consumer.client, parseYaml(file("test/fixtures/consumer-bindings.yaml"), vars));
  await waitForBinding(t.consumer.client, "network.test.io");
  await waitForBinding(t.consumer.client, "compute.test.io");
  return t;
}

describe("drop-in from the Go original: its manifests and RBAC, unchanged", () => {
  let kcp: Kcp | undefined;
  let bins: Binaries | undefined;
  let tenants: Tenants | undefined;
  let failed = false;

  before(async () => {
    kcp = await startKcp({ tokens: [...TOKENS, ORIGINAL_WEBHOOK] });
    tenants = await setUp(kcp);
    bins = new Binaries(kcp, "auto");
    // The operator's one deploy-time choice (chart value, flag, here its environment variable): the original's
    // bindings never accepted the read-only claims, so its rules cannot be checked and are enforced only on this opt-in.
    process.env["ENFORCE_UNVERIFIED_RULES"] = "true";
    try {
      await bins.startWebhook({ identity: ORIGINAL_WEBHOOK });
    } finally {
      delete process.env["ENFORCE_UNVERIFIED_RULES"];
    }
    await bins.startController();
    await apply(tenants.compute.client, [originalRule]);
  });

  afterEach((t) => {
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (failed && bins && kcp) process.stderr.write(`\n${bins.logTails()}\n--- kcp ---\n${kcp.logTail(30)}\n`);
    await bins?.stop();
    await kcp?.stop();
  });

  // Before any DELETE (not even a dry run) reaches the webhook: its probe of the live lookup's read access, not a
  // lookup, is what tells it live lists protect the VM type. IndexForbidden ("not enforced") is the verdict of an
  // unprobed forbidden index, so the wait stops at either verdict and the assertion tells them apart.
  it("says before any DELETE that live lookups protect the rule", async () => {
    const c = await waitFor(
      "rule vm-dependencies: DependentsIndexed with a forbidden index's verdict (LiveLookup or IndexForbidden)",
      async () => {
        const r = await tenants!.compute.client.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/vm-dependencies`);
        const cond = r.status?.conditions?.find((x) => x.type === "DependentsIndexed");
        return cond && ["LiveLookup", "IndexForbidden"].includes(cond.reason) ? cond : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    assert.deepEqual([c.status, c.reason], ["True", "LiveLookup"], c.message);
    assert.match(c.message, /^protected by live lookups .*\(the per-shard read grant\).*provider-index\.yaml/);
    // One dependent type in all, the VM type: checked by live lookups.
    const series = `dependency_webhook_lookup_sources{source="live"}`;
    assert.equal(await scrapeSeries(bins!.webhook!, series), 1, series);
  });

  // The webhook enforces the unchecked rule (the opt-in) and says so in its report; the rule's Ready follows that,
  // instead of reading "not enforced" while every referenced delete is refused.
  it("reads Ready=True with the opt-in, its references marked unchecked", async () => {
    const conditions = await waitFor(
      "rule vm-dependencies: Ready=True",
      async () => {
        const r = await tenants!.compute.client.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/vm-dependencies`);
        const ready = r.status?.conditions?.find((x) => x.type === "Ready");
        return ready?.status === "True" ? r.status!.conditions! : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    const refs = conditions.find((x) => x.type === "ReferencesValid");
    assert.deepEqual([refs?.status, refs?.reason], ["Unknown", "ChecksDeclined"], refs?.message);
    assert.match(refs?.message ?? "", /the webhook enforces the rule anyway \(--enforce-unverified-rules\)/);
  });

  it("refuses a referenced VPC with 409 naming the VM, and deletes a free one", async () => {
    const env = kcp!;
    const consumer = tenants!.consumer.client;
    await waitForVwc(env, true);
    await create(consumer, vpc("my-vpc"), vm("my-vm", { vpc: "my-vpc" }), vpc("isolated-vpc"));
    await waitForProtection(consumer, `${at(VPCS)}/my-vpc`, true);

    assertDenied(await tryDelete(consumer, `${at(VPCS)}/my-vpc`), /still referenced by VirtualMachine\/my-vm/);
    assert.equal(await exists(consumer, `${at(VPCS)}/my-vpc`), true);
    assert.deepEqual(await tryDelete(consumer, `${at(VPCS)}/isolated-vpc`), { allowed: true });
    await waitFor(
      "isolated-vpc to be gone",
      async () => !(await exists(consumer, `${at(VPCS)}/isolated-vpc`)) || undefined,
    );

    // What checked it: live lookups, because the provider never consented to the index.
    const series = `dependency_webhook_lookup_sources{source="live"}`;
    assert.equal(await scrapeSeries(bins!.webhook!, series), 1, series);
    const r = await tenants!.compute.client.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/vm-dependencies`);
    const cond = r.status?.conditions?.find((x) => x.type === "DependentsIndexed");
    assert.deepEqual([cond?.status, cond?.reason], ["True", "LiveLookup"], cond?.message);
  });

  // Ready means refusing here too: live lookups (the shard grant) and the opt-in, for a rule nobody checked.
  it("once `kubectl wait --for=condition=Ready` returns for a new rule, a referenced delete is refused at once", async () => {
    const env = kcp!;
    const rounds = await readyRace({
      env,
      provider: tenants!.compute,
      consumer: tenants!.consumer,
      rule: (name) => ({ ...originalRule, metadata: { name } }),
      suiteRules: { names: ["vm-dependencies"], restore: [originalRule] },
      rounds: 3,
    });
    process.stdout.write(`# ready race: ${JSON.stringify(rounds)}\n`);
    for (const r of rounds) assertDenied(r.outcome, new RegExp(`still referenced by VirtualMachine/${r.rule}$`));
  });
});
