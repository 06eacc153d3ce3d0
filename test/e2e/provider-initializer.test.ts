// Providers bootstrapped by their WorkspaceType (issue 31), on a real kcp with both binaries running: the platform
// applies deploy/kcp/workspacetype-provider.yaml and deploy/rbac/provider-initializer.yaml once, the controller serves
// the type's initializer (--provider-workspace-type), and a provider created as a workspace of that type needs nothing
// applied by hand: with its own workspace-scoped token it exports its API and writes a rule, which reads Ready and
// protects. kcp holds one such workspace's setup mid-way (its last write refused), the controller is killed there, and
// a fresh one finishes it. Second: the artifact-transfer rule's shape, one export holding the dependent (Order) and the dependency
// (Endpoint), four field paths with `[*]`, a provider at root:providers:odd and consumers at root:orgs:acme:demo.
// Consumers bind with their own tokens (the providers' bind grants). Last, local targets, and the kubectl plugin on
// them as the consumer: why on a Secret an Endpoint names, and a teardown that deletes the Endpoint first.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import {
  acceptedClaims,
  APIBINDINGS_PATH,
  CONSENT_BINDING_PATH as CONSENT_BINDING,
  CONSENT_ROLE_PATH,
  INDEX_CONSENT_NAME,
} from "../../src/controller/initializer-plan.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { LOCAL_TARGETS_EXPORT_ANNOTATION, LOCAL_TARGETS_LABEL } from "../../src/controller/local-targets.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apiBinding, apply, createWorkspace, waitForBinding, type KObject } from "../../tools/kcp/api.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { bindGrant, tenant } from "../../tools/kcp/tenant.ts";
import { EXPORT_NAME, IDENTITIES, PATHS, RBAC_VARS } from "../../tools/kcp/topology.ts";
import {
  bindVault,
  CONFIGMAPS,
  ENDPOINT_HOLD,
  ENDPOINTS,
  endpointBackend,
  grantLocalTargets,
  plugin,
  SECRETS,
  VAULT_GROUP,
  vaultApi,
  vaultObjects,
  vaultRule,
  watchDeletes,
} from "./local-targets.ts";
import {
  RULES,
  VPCS,
  assertDenied,
  at,
  create,
  e2eSuite,
  exportedKind,
  tryDelete,
  vpc,
  waitForProtection,
} from "./helpers.ts";

const e2e = e2eSuite();
const file = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), "utf8");
const INITIALIZER = "root:dependency-provider";
const PROVIDERS = "root:providers";
const WORKSPACES = `/clusters/${PROVIDERS}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const LOGICAL_CLUSTER = "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";
const INITIALIZER_ARGS = [`--provider-workspace-type=${INITIALIZER}`, `--webhook-user=${IDENTITIES.webhook.user}`];

interface Workspace {
  spec?: { cluster?: string };
  status?: { phase?: string };
}
type Cond = { type: string; status: string; reason?: string; message?: string };

/** What kcp holds inside a workspace, read as the shard's system:masters (an Initializing workspace admits no one else). */
const inside = (cluster: string): RestClient => e2e.kcp.shardAdmins[0]!.forCluster(cluster);

async function restartController(): Promise<void> {
  await e2e.bins.controller?.proc.stop();
  e2e.bins.controllerArgs = INITIALIZER_ARGS;
  await e2e.bins.startController();
}

type LC = { status?: { initializers?: string[] } };
type CRB = { roleRef: { name: string }; subjects?: unknown[] };
type Claim = { group: string; resource: string; state?: string; selector?: { matchAll?: boolean } };
type Binding = { spec: { reference: { export: { name: string } }; permissionClaims?: Claim[] } };

/** Which of the dep-ctrl export's claims the workspace's binding of it does not accept for every object. */
async function unacceptedClaims(cluster: string): Promise<string[]> {
  const bindings = await inside(cluster).listAll<Binding>(APIBINDINGS_PATH);
  const depCtrl = bindings.items.filter((b) => b.spec.reference.export.name === EXPORT_NAME);
  assert.equal(depCtrl.length, 1, "one binding of the dep-ctrl export (kcp's default one and ours are the same)");
  const claims = depCtrl[0]!.spec.permissionClaims ?? [];
  return acceptedClaims().flatMap((want) => {
    const have = claims.find((c) => c.group === want.group && c.resource === want.resource);
    return have?.state === "Accepted" && have.selector?.matchAll === true ? [] : [want.resource];
  });
}

/**
 * Creates root:providers:<name> while nothing serves the initializer, makes kcp hold its setup mid-way, starts the
 * controller and returns the workspace's logical cluster once the setup is shown to be stuck there. The hold is a
 * ClusterRoleBinding of the index consent's name bound to another role: kcp never lets a roleRef change, so the
 * controller's last write (putting the consent's roleRef back) is refused on every pass while its earlier writes
 * stand, and the initializer stays.
 */
async function heldMidway(name: string): Promise<string> {
  await e2e.bins.controller?.proc.stop();
  await e2e.kcp.admin.request("POST", WORKSPACES, {
    body: {
      apiVersion: "tenancy.kcp.io/v1alpha1",
      kind: "Workspace",
      metadata: { name },
      spec: { type: { name: "dependency-provider", path: "root" } },
    },
  });
  const cluster = await waitFor(
    `${name}'s logical cluster`,
    async () => (await e2e.kcp.admin.get<Workspace>(`${WORKSPACES}/${name}`)).spec?.cluster,
    { timeoutMs: 90_000, intervalMs: 200 },
  );
  await waitFor(
    `${name} to carry the initializer`,
    async () => (await inside(cluster).get<LC>(LOGICAL_CLUSTER)).status?.initializers?.includes(INITIALIZER),
    { timeoutMs: 90_000, intervalMs: 200 },
  );
  const rbac = "rbac.authorization.k8s.io";
  await inside(cluster).request("POST", CONSENT_BINDING.replace(/\/[^/]+$/, ""), {
    body: {
      apiVersion: `${rbac}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name: INDEX_CONSENT_NAME },
      roleRef: { apiGroup: rbac, kind: "ClusterRole", name: "someone-elses-role" },
      subjects: [{ apiGroup: rbac, kind: "User", name: IDENTITIES.webhook.user }],
    },
  });
  await restartController();
  const proc = e2e.bins.controller!.proc;
  await waitFor(
    "kcp to refuse the controller's last write",
    async () => /cannot change roleRef/.test(proc.logTail(40)),
    {
      timeoutMs: 90_000,
      intervalMs: 200,
    },
  );
  // Mid-way, as kcp shows it: the binding's claims accepted and the consent's role written, the initializer still on.
  assert.deepEqual(await unacceptedClaims(cluster), []);
  assert.ok(await inside(cluster).getOptional(CONSENT_ROLE_PATH));
  assert.equal((await inside(cluster).get<CRB>(CONSENT_BINDING)).roleRef.name, "someone-elses-role");
  assert.ok((await inside(cluster).get<LC>(LOGICAL_CLUSTER)).status?.initializers?.includes(INITIALIZER));
  assert.equal((await e2e.kcp.admin.get<Workspace>(`${WORKSPACES}/${name}`)).status?.phase, "Initializing");
  return cluster;
}

async function waitRuleReady(ws: RestClient, name: string): Promise<void> {
  await waitFor(
    `rule ${name} Ready`,
    async () => {
      const r = await ws.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/${name}`);
      return r.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" || undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}

/** The platform, once: the type in root, its initializer's RBAC there, and path resolution in root:providers. */
let platformReady: Promise<void> | undefined;
const platform = (): Promise<void> => (platformReady ??= setUpPlatform());
async function setUpPlatform(): Promise<void> {
  await Promise.all([
    (async (): Promise<void> => {
      await apply(e2e.kcp.ws("root"), file("deploy/kcp/workspacetype-provider.yaml"));
      await apply(e2e.kcp.ws("root"), file("deploy/rbac/provider-initializer.yaml"), RBAC_VARS);
    })(),
    (async (): Promise<void> => {
      await createWorkspace(e2e.kcp.admin, PROVIDERS);
      await apply(e2e.kcp.ws(PROVIDERS), file("deploy/rbac/workspace-resolution.yaml"), RBAC_VARS);
    })(),
  ]);
}

test("a provider of the type is set up by the initializer, also across a controller crash mid-way", async () => {
  await platform();
  const cluster = await heldMidway("gadgets");
  // The crash: SIGKILL while kcp holds the setup mid-way, then the hold goes and a fresh process takes over.
  const proc = e2e.bins.controller!.proc;
  proc.killGroup("SIGKILL");
  await waitFor("the controller to die", async () => (!proc.running ? true : undefined), { timeoutMs: 30_000 });
  await inside(cluster).request("DELETE", CONSENT_BINDING);
  await restartController();
  await waitFor(
    "root:providers:gadgets Ready",
    async () => (await e2e.kcp.admin.get<Workspace>(`${WORKSPACES}/gadgets`)).status?.phase === "Ready" || undefined,
    { timeoutMs: 90_000, intervalMs: 300 },
  );
  assert.ok(!(await inside(cluster).get<LC>(LOGICAL_CLUSTER)).status?.initializers?.includes(INITIALIZER));
  const consent = await inside(cluster).get<CRB>(CONSENT_BINDING);
  assert.equal(consent.roleRef.name, INDEX_CONSENT_NAME);
  assert.deepEqual(consent.subjects, [
    { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: IDENTITIES.webhook.user },
  ]);

  // The provider, with its own token and nothing else: its API and a rule whose Gadgets depend on VPCs.
  const provider = (await tenant(e2e.kcp, `${PROVIDERS}:gadgets`, { name: "owner" })).client;
  const gadgets = { group: "gadgets.test.io", kind: "Gadget", plural: "gadgets" };
  const ref = { type: "object", properties: { name: { type: "string" } } };
  await apply(provider, [
    ...exportedKind({ ...gadgets, specProperties: { vpcRef: ref } }),
    ...bindGrant(gadgets.group),
  ]);
  const dependent = { group: gadgets.group, kind: gadgets.kind, resource: gadgets.plural };
  await apply(provider, [dependencyRule("gadget-vpcs", [{ resource: "vpcs", path: PATHS.network }], { dependent })]);
  await waitRuleReady(provider, "gadget-vpcs");

  // The consumer binds it with its own token, as the provider's bind grant lets any authenticated user.
  const consumer = (await tenant(e2e.kcp, PATHS.consumer1, { name: "owner" })).client;
  await apply(consumer, [apiBinding(gadgets.group, `${PROVIDERS}:gadgets`)]);
  await waitForBinding(consumer, gadgets.group);
  const gadget: KObject = {
    apiVersion: "gadgets.test.io/v1",
    kind: "Gadget",
    metadata: { name: "g-1", namespace: "default" },
    spec: { vpcRef: { name: "held-vpc" } },
  };
  await create(consumer, vpc("held-vpc"), vpc("free-vpc"), gadget);
  await waitForProtection(consumer, `${at(VPCS)}/held-vpc`, true);
  assertDenied(await tryDelete(consumer, `${at(VPCS)}/held-vpc`), /still referenced by Gadget\/g-1$/);
  assert.deepEqual(await tryDelete(consumer, `${at(VPCS)}/free-vpc`), { allowed: true });
});

/** Orders (the dependent) and Endpoints (their dependencies) in one export, as the artifact-transfer service has them. */
function arcApi(): KObject[] {
  const group = "arc.opendefense.cloud";
  const ref = { type: "object", properties: { name: { type: "string" } } };
  const pair = { type: "object", properties: { srcRef: ref, dstRef: ref } };
  const kinds = [
    { kind: "Order", plural: "orders", spec: { defaults: pair, artifacts: { type: "array", items: pair } } },
    { kind: "Endpoint", plural: "endpoints", spec: { url: { type: "string" } } },
  ];
  const schemas = kinds.map(({ kind, plural, spec }) => ({
    apiVersion: "apis.kcp.io/v1alpha1",
    kind: "APIResourceSchema",
    metadata: { name: `v1.${plural}.${group}` },
    spec: {
      group,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: "Namespaced",
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: true,
          schema: { type: "object", properties: { spec: { type: "object", properties: spec } } },
        },
      ],
    },
  }));
  const resources = kinds.map((k) => ({
    group,
    name: k.plural,
    schema: `v1.${k.plural}.${group}`,
    storage: { crd: {} },
  }));
  return [
    ...schemas,
    { apiVersion: "apis.kcp.io/v1alpha2", kind: "APIExport", metadata: { name: group }, spec: { resources } },
  ];
}

/** The artifact-transfer rule, verbatim but for its name and the provider's path. */
function arcRule(providerPath: string): KObject {
  const group = "arc.opendefense.cloud";
  const fields = [
    ".spec.defaults.srcRef.name",
    ".spec.defaults.dstRef.name",
    ".spec.artifacts[*].srcRef.name",
    ".spec.artifacts[*].dstRef.name",
  ];
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: "order-endpoints" },
    spec: {
      dependent: { apiExportName: group, group, version: "v1alpha1", kind: "Order", resource: "orders" },
      dependencies: fields.map((p) => ({
        apiExportRef: { path: providerPath, name: group },
        group,
        version: "v1alpha1",
        resource: "endpoints",
        fieldRef: { path: p },
      })),
    },
  };
}

test("the artifact-transfer shape: one export, four paths with [*], a provider of a type extending it, nested paths", async () => {
  await platform();
  if (!e2e.bins.controller?.proc.running || !e2e.bins.controllerArgs.includes(INITIALIZER_ARGS[0]!))
    await restartController();
  const odd = `${PROVIDERS}:odd`;
  const demo = "root:orgs:acme:demo";
  // A platform's own type that extends the provider type: its workspaces carry the same initializer.
  await apply(e2e.kcp.ws("root"), [
    {
      apiVersion: "tenancy.kcp.io/v1alpha1",
      kind: "WorkspaceType",
      metadata: { name: "arc-provider" },
      spec: { extend: { with: [{ name: "dependency-provider", path: "root" }] } },
    },
  ]);
  await createWorkspace(e2e.kcp.admin, odd, { type: "arc-provider" });
  const provider = (await tenant(e2e.kcp, odd, { name: "owner" })).client;
  await apply(provider, [...arcApi(), ...bindGrant("arc.opendefense.cloud")]);
  await apply(provider, [arcRule(odd)]);
  await waitRuleReady(provider, "order-endpoints");

  await createWorkspace(e2e.kcp.admin, demo);
  const consumer = (await tenant(e2e.kcp, demo, { name: "owner" })).client;
  await apply(consumer, [apiBinding("arc.opendefense.cloud", odd)]);
  await waitForBinding(consumer, "arc.opendefense.cloud");
  const ENDPOINTS = "/apis/arc.opendefense.cloud/v1alpha1/namespaces/default/endpoints";
  const ORDERS = "/apis/arc.opendefense.cloud/v1alpha1/namespaces/default/orders";
  const endpoint = (name: string): KObject => ({
    apiVersion: "arc.opendefense.cloud/v1alpha1",
    kind: "Endpoint",
    metadata: { name, namespace: "default" },
    spec: { url: `oci://${name}` },
  });
  // Each held Endpoint is named by exactly one of the four paths.
  const held = ["default-src", "default-dst", "artifact-src", "artifact-dst"];
  const order: KObject = {
    apiVersion: "arc.opendefense.cloud/v1alpha1",
    kind: "Order",
    metadata: { name: "transfer-1", namespace: "default" },
    spec: {
      defaults: { srcRef: { name: "default-src" }, dstRef: { name: "default-dst" } },
      artifacts: [
        { srcRef: { name: "other" } },
        { srcRef: { name: "artifact-src" }, dstRef: { name: "artifact-dst" } },
      ],
    },
  };
  await create(consumer, ...[...held, "other", "free"].map(endpoint), order);
  await waitForProtection(consumer, `${ENDPOINTS}/artifact-dst`, true);
  for (const name of held)
    assertDenied(await tryDelete(consumer, `${ENDPOINTS}/${name}`), /still referenced by Order\/transfer-1$/);
  assert.deepEqual(await tryDelete(consumer, `${ENDPOINTS}/free`), { allowed: true });

  await consumer.request("DELETE", `${ORDERS}/transfer-1`);
  await waitForProtection(consumer, `${ENDPOINTS}/default-src`, false);
  for (const name of held) assert.deepEqual(await tryDelete(consumer, `${ENDPOINTS}/${name}`), { allowed: true }, name);
});

/**
 * The vault provider (root:providers:vault) with its own token: the Endpoint API and its claim, the grant to the
 * controller, the local-target rule. Every step is idempotent, so each local-targets case sets it up and runs alone.
 */
async function vaultProvider(): Promise<{ vault: string; provider: RestClient }> {
  await platform();
  if (!e2e.bins.controller?.proc.running || !e2e.bins.controllerArgs.includes(INITIALIZER_ARGS[0]!))
    await restartController();
  const vault = `${PROVIDERS}:vault`;
  await createWorkspace(e2e.kcp.admin, vault, { type: "dependency-provider" });
  const provider = (await tenant(e2e.kcp, vault, { name: "owner" })).client;
  await apply(provider, vaultApi());
  await grantLocalTargets(provider, file("deploy/rbac/provider-local-targets.yaml"));
  await apply(provider, [vaultRule()]);
  return { vault, provider };
}

test("local targets: a Secret and a ConfigMap an Endpoint names are protected where the consumer consented", async () => {
  const { vault, provider } = await vaultProvider();

  const [accepting, declining] = ["root:orgs:acme:vault-a", "root:orgs:acme:vault-b"];
  const consumers: RestClient[] = [];
  for (const [path, accept] of [
    [accepting, true],
    [declining, false],
  ] as const) {
    await createWorkspace(e2e.kcp.admin, path);
    const consumer = (await tenant(e2e.kcp, path, { name: "owner" })).client;
    await bindVault(consumer, vault, accept);
    await waitForBinding(consumer, VAULT_GROUP);
    await create(consumer, ...vaultObjects());
    consumers.push(consumer);
  }
  const [a, b] = consumers as [RestClient, RestClient];
  const message = await waitFor(
    "LocalTargetsProtected counting 1 of 2",
    async () => {
      const r = await provider.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/endpoint-credentials`);
      const c = r.status?.conditions?.find((x) => x.type === "LocalTargetsProtected");
      return c?.status === "True" && /in 1 of 2 consumer workspaces/.test(c.message ?? "") ? c.message : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
  assert.match(message, /^protecting configmaps and secrets in 1 of 2 consumer workspaces; 1 did not accept/);
  await waitRuleReady(provider, "endpoint-credentials");

  await waitForProtection(a, `${SECRETS}/held-secret`, true);
  assertDenied(await tryDelete(a, `${SECRETS}/held-secret`), /still referenced by Endpoint\/e1$/);
  assertDenied(await tryDelete(a, `${CONFIGMAPS}/held-ca`), /still referenced by Endpoint\/e1$/);
  assert.deepEqual(await tryDelete(a, `${SECRETS}/free-secret`), { allowed: true });
  assert.deepEqual(await tryDelete(a, `${CONFIGMAPS}/free-ca`), { allowed: true });
  // The consumer that declined keeps working, unprotected.
  assert.deepEqual(await tryDelete(b, `${SECRETS}/held-secret`), { allowed: true });
  assert.deepEqual(await tryDelete(b, `${CONFIGMAPS}/held-ca`), { allowed: true });
});

type Vwc = { metadata: { name: string; uid: string; annotations?: Record<string, string> } };
const LOCAL_VWCS = `${WEBHOOK_CONFIGURATIONS_PATH}?labelSelector=${encodeURIComponent(LOCAL_TARGETS_LABEL)}`;

/** Our local-target configuration in the consumer, once there (another than `not`, when given). */
async function localConfigurationIn(consumer: RestClient, not?: string): Promise<Vwc> {
  return waitFor(
    "dependency-controller-local-<id> in the consumer",
    async () => (await consumer.get<{ items: Vwc[] }>(LOCAL_VWCS)).items.find((v) => v.metadata.uid !== not),
    { timeoutMs: 90_000, intervalMs: 300 },
  );
}

test("local targets on events: with an hour's resync, a new consumer is protected and a deleted configuration returns", async () => {
  await platform();
  // Only the watches of the export's bindings and configurations can explain what follows: no resync comes.
  await e2e.bins.controller?.proc.stop();
  e2e.bins.controllerArgs = [...INITIALIZER_ARGS, "--resync-period=1h"];
  await e2e.bins.startController();
  try {
    const vault = `${PROVIDERS}:vault-events`;
    await createWorkspace(e2e.kcp.admin, vault, { type: "dependency-provider" });
    const provider = (await tenant(e2e.kcp, vault, { name: "owner" })).client;
    await apply(provider, vaultApi());
    await grantLocalTargets(provider, file("deploy/rbac/provider-local-targets.yaml"));
    await apply(provider, [vaultRule()]);
    // Ready: no pass is requeued any more for the webhook's first list, so none comes by itself from here on.
    await waitRuleReady(provider, "endpoint-credentials");

    const path = "root:orgs:acme:vault-events";
    await createWorkspace(e2e.kcp.admin, path);
    const consumer = (await tenant(e2e.kcp, path, { name: "owner" })).client;
    await bindVault(consumer, vault, true);
    const installed = await localConfigurationIn(consumer);
    const providerCluster = (await e2e.kcp.admin.get<Workspace>(`${WORKSPACES}/vault-events`)).spec?.cluster;
    assert.equal(
      installed.metadata.annotations?.[LOCAL_TARGETS_EXPORT_ANNOTATION],
      `${providerCluster}/${VAULT_GROUP}`,
    );
    await create(consumer, ...vaultObjects());
    await waitForProtection(consumer, `${SECRETS}/held-secret`, true);
    assertDenied(await tryDelete(consumer, `${SECRETS}/held-secret`), /still referenced by Endpoint\/e1$/);

    // The consumer deletes ours while still accepting the claim: it is back, and protects again.
    await consumer.request("DELETE", `${WEBHOOK_CONFIGURATIONS_PATH}/${installed.metadata.name}`);
    const again = await localConfigurationIn(consumer, installed.metadata.uid);
    assert.equal(again.metadata.name, installed.metadata.name);
    await waitForProtection(consumer, `${SECRETS}/held-secret`, true);
    assertDenied(await tryDelete(consumer, `${SECRETS}/held-secret`), /still referenced by Endpoint\/e1$/);
  } finally {
    await restartController();
  }
});

test("local targets and the plugin: why names the Endpoint behind a Secret; teardown deletes the Endpoint first, 0 refused", async () => {
  const { vault } = await vaultProvider();

  // A consumer of its own, which accepts the claim; everything it does is done with its own token.
  const where = "root:orgs:acme:vault-plugin";
  await createWorkspace(e2e.kcp.admin, where);
  const owner = await tenant(e2e.kcp, where, { name: "owner" });
  const ws = owner.client;
  const connection = [`--kubeconfig=${e2e.kcp.kubeconfigFor(owner.token, where, "vault-plugin-owner.kubeconfig")}`];
  await bindVault(ws, vault, true);
  await waitForBinding(ws, VAULT_GROUP);
  const objects = vaultObjects();
  for (const o of objects) if (o.kind === "Endpoint") o.metadata.finalizers = [ENDPOINT_HOLD];
  await create(ws, ...objects);
  await waitForProtection(ws, `${SECRETS}/held-secret`, true);

  // why, as the consumer: the Endpoint and its field behind the Secret; a Secret nothing names is free.
  const why = await plugin(connection, "why", "secret/held-secret", "-n", "default", "-o", "json");
  assert.equal(why.code, 1, why.stderr);
  const doc = JSON.parse(why.stdout) as { verdict: string; refusal: { blockers: unknown[] } };
  assert.equal(doc.verdict, "refused");
  assert.deepEqual(doc.refusal.blockers, [
    { kind: "Endpoint", namespace: "default", name: "e1", field: ".spec.secretRef.name" },
  ]);
  const text = await plugin(connection, "why", "configmap/held-ca", "-n", "default");
  assert.equal(text.code, 1, text.stderr);
  assert.match(text.stdout, /Endpoint\s+default\s+e1\s+\.spec\.caRef\.name/);
  const free = await plugin(connection, "why", "secret/free-secret", "-n", "default");
  assert.equal(free.code, 0, free.stderr);
  assert.match(free.stdout, /can be deleted now/);

  // The plan (the consumer may read no rule: every object is dry-run): the held Secret and ConfigMap after e1.
  const planned = await plugin(connection, "teardown", "-n", "default", "--plan", "-o", "json");
  assert.equal(planned.code, 0, planned.stderr);
  const plan = JSON.parse(planned.stdout) as { objects: { kind: string; name: string; wave: number }[] };
  const wave = new Map(plan.objects.map((o) => [`${o.kind}/${o.name}`, o.wave]));
  assert.ok(wave.get("Secret/held-secret")! > wave.get("Endpoint/e1")!, planned.stdout);
  assert.ok(wave.get("ConfigMap/held-ca")! > wave.get("Endpoint/e1")!, planned.stdout);
  assert.equal(wave.has("ConfigMap/kube-root-ca.crt"), false, "what kcp publishes is not taken down");

  // The run, while the test holds e1 Terminating for a moment: e1 is gone before either is asked, none is refused.
  const stop = new AbortController();
  const seen = await watchDeletes(ws, { Endpoint: ENDPOINTS, Secret: SECRETS, ConfigMap: CONFIGMAPS }, stop.signal);
  const released = endpointBackend(ws, stop.signal);
  const run = await plugin(connection, "teardown", "-n", "default", "-o", "json");
  stop.abort();
  assert.equal(await released, 1, "e1 was held by its finalizer, then released");
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const report = JSON.parse(run.stdout) as { complete: boolean; refusedDeletes: number; deleted: number };
  assert.deepEqual(
    { complete: report.complete, refusedDeletes: report.refusedDeletes },
    { complete: true, refusedDeletes: 0 },
  );
  const gone = seen.get("Endpoint/e1")?.gone;
  assert.ok(gone !== undefined, "e1 went");
  for (const id of ["Secret/held-secret", "ConfigMap/held-ca", "Secret/free-secret", "ConfigMap/free-ca"]) {
    const deleting = seen.get(id)?.deleting;
    assert.ok(deleting !== undefined && deleting > gone, `${id} deleted at ${deleting}, after e1 went at ${gone}`);
  }
  assert.deepEqual((await ws.listAll(SECRETS)).items, []);
  const left = (await ws.listAll<{ metadata: { name: string } }>(CONFIGMAPS)).items.map((c) => c.metadata.name);
  assert.deepEqual(
    left.filter((n) => n !== "kube-root-ca.crt"),
    [],
  );
});
