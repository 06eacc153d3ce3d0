// The reconcile pass against an in-memory stand-in for the dep-ctrl virtual workspace (one or two shard endpoints):
// what it writes, where, and what it leaves alone.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import {
  CLUSTER_ANNOTATION,
  type LogicalClusterName,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  type Condition,
} from "../../src/api/types.ts";
import { DEPENDENCY_RULES_PATH, logicalClusterName, WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { type ValidatingWebhookConfiguration, WORKSPACE_PATHS_ANNOTATION } from "../../src/controller/desired.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import type { RuleObject } from "../../src/controller/plan.ts";
import { INDEX_POLL_MS, Reconciler, type ReconcilerDeps } from "../../src/controller/reconciler.ts";
import { dependentTypeKey, type IndexReport } from "../../src/api/index-report.ts";
import { parseRule } from "../../src/api/rule.ts";
import type { ClusterClient } from "../../src/controller/writer.ts";
import { APIEXPORTS_PATH, APIRESOURCESCHEMAS_PATH } from "../../src/kcp/exports.ts";
import { RULE_AUTHORS_ANNOTATION } from "../../src/api/references.ts";
import { ApiError, type RequestOptions } from "../../src/kcp/rest.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { type DepSpec, ruleObject } from "./helpers-rules.ts";
import { MemoryVerdictBook } from "../support/verdict-book.ts";

const A = "https://shard-a/services/apiexport/dep/dependencies.opendefense.cloud";
const B = "https://shard-b/services/apiexport/dep/dependencies.opendefense.cloud";
const NET = logicalClusterName("netcluster");
const COMPUTE = logicalClusterName("computecluster");

/** Virtual workspace endpoints serving some logical clusters each; a cluster on another shard answers 403. */
class FakeKcp {
  readonly servedBy = new Map<string, string>([
    [NET, A],
    [COMPUTE, A],
  ]);
  readonly vwcs = new Map<string, ValidatingWebhookConfiguration>(); // "<cluster>/<name>"
  readonly rules = new Map<string, RuleObject>(); // "<cluster>/<name>"
  readonly writes: string[] = [];
  /** APIExports every workspace serves ("<export>" → resource → kind); tests delete entries to break references. */
  readonly exports = new Map<string, Map<string, string>>([
    ["compute.test.io", new Map([["virtualmachines", "VirtualMachine"]])],
    [
      "network.test.io",
      new Map([
        ["vpcs", "VPC"],
        ["subnets", "Subnet"],
      ]),
    ],
  ]);
  /** Workspaces whose binding did not accept the read-only claims: reading their exports answers 403. */
  readonly noConsent = new Set<string>();
  /** Export name → the value of its rule-authors annotation (which workspaces' rules its provider admits). */
  readonly ruleAuthors = new Map<string, string>();
  failWrites = false;
  private rv = 1;

  addRule(obj: Record<string, unknown>): void {
    const r = obj as unknown as RuleObject;
    r.metadata.resourceVersion = String(this.rv++);
    this.rules.set(`${r.metadata.annotations?.[CLUSTER_ANNOTATION]}/${r.metadata.name}`, r);
  }

  client(endpoint: string, cluster: string): ClusterClient {
    return {
      request: <T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> =>
        Promise.resolve().then(() => this.handle(endpoint, cluster, method, path, opts) as T),
    };
  }

  private handle(endpoint: string, cluster: string, method: string, path: string, opts: RequestOptions): unknown {
    const fail = (status: number, reason: string): never => {
      throw new ApiError(method, `${endpoint}/clusters/${cluster}${path}`, status, reason, reason);
    };
    if (this.servedBy.get(cluster) !== endpoint) fail(403, "Forbidden");
    if (method !== "GET") this.writes.push(`${method} ${cluster}${path}`);
    if (method !== "GET" && this.failWrites) fail(500, "InternalError");
    if (method === "GET" && path.startsWith("/apis/apis.kcp.io/") && this.noConsent.has(cluster))
      fail(403, "Forbidden");
    if (method === "GET" && path.startsWith(APIEXPORTS_PATH)) {
      const name = path.slice(APIEXPORTS_PATH.length + 1);
      const resources = this.exports.get(name) ?? fail(404, "NotFound");
      const authors = this.ruleAuthors.get(name);
      return {
        metadata: authors === undefined ? {} : { annotations: { [RULE_AUTHORS_ANNOTATION]: authors } },
        spec: { resources: [...resources.keys()].map((r) => ({ group: name, name: r, schema: `v1.${r}.${name}` })) },
      };
    }
    if (method === "GET" && path.startsWith(APIRESOURCESCHEMAS_PATH)) {
      const [, resource = "", ...group] = path.slice(APIRESOURCESCHEMAS_PATH.length + 1).split(".");
      const kind = this.exports.get(group.join("."))?.get(resource) ?? fail(404, "NotFound");
      return { spec: { names: { kind }, versions: [{ name: "v1", served: true }] } };
    }
    if (path.startsWith(DEPENDENCY_RULES_PATH)) {
      const name = path.slice(DEPENDENCY_RULES_PATH.length + 1).replace(/\/status$/, "");
      const body = opts.body as RuleObject;
      const cur = this.rules.get(`${cluster}/${name}`);
      if (!cur) fail(404, "NotFound");
      if (cur!.metadata.resourceVersion !== body.metadata.resourceVersion) fail(409, "Conflict");
      const next = { ...cur!, status: body.status, metadata: { ...cur!.metadata, resourceVersion: String(this.rv++) } };
      this.rules.set(`${cluster}/${name}`, next);
      return next;
    }
    const name = path.slice(WEBHOOK_CONFIGURATIONS_PATH.length + 1);
    const key = (n: string): string => `${cluster}/${n}`;
    if (method === "POST") {
      const body = structuredClone(opts.body as ValidatingWebhookConfiguration);
      if (this.vwcs.has(key(body.metadata.name))) fail(409, "AlreadyExists");
      body.metadata = { ...body.metadata, uid: `uid-${this.rv}`, resourceVersion: String(this.rv++) };
      body.metadata.annotations = { ...body.metadata.annotations, [CLUSTER_ANNOTATION]: cluster };
      this.vwcs.set(key(body.metadata.name), body);
      return body;
    }
    const cur = this.vwcs.get(key(name)) ?? fail(404, "NotFound");
    if (method === "GET") return cur;
    if (method === "PUT") {
      const body = structuredClone(opts.body as ValidatingWebhookConfiguration);
      if (body.metadata.resourceVersion !== cur.metadata.resourceVersion) fail(409, "Conflict");
      body.metadata.resourceVersion = String(this.rv++);
      this.vwcs.set(key(name), body);
      return body;
    }
    if (method === "DELETE") {
      const uid = (opts.body as { preconditions?: { uid?: string } }).preconditions?.uid;
      if (uid && uid !== cur.metadata.uid) fail(409, "Conflict");
      this.vwcs.delete(key(name));
      return {};
    }
    return fail(405, "MethodNotAllowed");
  }

  /** Puts a configuration straight into a workspace (someone else's, or ours left from an earlier run). */
  seedVwc(cluster: LogicalClusterName, name: string, ours: boolean): void {
    this.vwcs.set(`${cluster}/${name}`, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: {
        name,
        uid: `uid-seed-${name}`,
        resourceVersion: String(this.rv++),
        annotations: { [CLUSTER_ANNOTATION]: cluster },
        labels: ours ? { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } : {},
      },
      webhooks: [],
    });
  }
}

interface Setup {
  kcp: FakeKcp;
  reconciler: Reconciler;
  resolutions: Map<string, Resolution>;
  invalidated: string[];
  deps: ReconcilerDeps;
  state: { synced: boolean; leader: boolean; ca: string };
}

function setup(): Setup {
  const kcp = new FakeKcp();
  const resolutions = new Map<string, Resolution>([["root:network-provider", { ok: true, cluster: NET }]]);
  const invalidated: string[] = [];
  const state = { synced: true, leader: true, ca: "Q0Ex" };
  const endpointOf = (cluster: string): string => kcp.servedBy.get(cluster) ?? A;
  const deps: ReconcilerDeps = {
    rules: {
      listWithEndpoints: () =>
        [...kcp.rules.values()].map((object) => ({
          endpoint: endpointOf(object.metadata.annotations?.[CLUSTER_ANNOTATION] ?? ""),
          object,
        })),
      hasSynced: () => state.synced,
      endpoints: () => [B, A],
    },
    // The informer only lists configurations with our label (label selector), as the real one does.
    configurations: {
      listWithEndpoints: () =>
        [...kcp.vwcs.values()]
          .filter((o) => o.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE)
          .map((object) => ({ endpoint: endpointOf(object.metadata.annotations?.[CLUSTER_ANNOTATION] ?? ""), object })),
      hasSynced: () => state.synced,
    },
    resolver: {
      resolve: (p) => Promise.resolve(resolutions.get(p) ?? { ok: false, reason: `workspace ${p} not found` }),
      invalidateCluster: (c) => invalidated.push(c),
    },
    clientFor: (endpoint, cluster) => kcp.client(endpoint, cluster),
    webhookBaseUrl: "https://webhook:9443",
    caBundle: () => state.ca,
    mayWrite: () => state.leader,
    verdicts: new MemoryVerdictBook(),
    exportName: "dependencies.opendefense.cloud",
    logger: silentLogger(),
    metrics: createMetrics(new Registry()),
    clock: new FakeClock(Date.parse("2026-01-01T00:00:00.123Z")),
  };
  return { kcp, reconciler: new Reconciler(deps), resolutions, invalidated, deps, state };
}

const vmRule = (deps: DepSpec[] = [{ resource: "vpcs" }]): Record<string, unknown> =>
  ruleObject(COMPUTE, "vm", { resource: "virtualmachines" }, deps);

const ruleStatus = (kcp: FakeKcp, name = "vm"): Record<string, [string, string]> =>
  Object.fromEntries(
    (
      (
        kcp.rules.get(`${COMPUTE}/${name}`)?.status as {
          conditions?: { type: string; status: string; reason: string }[];
        }
      )?.conditions ?? []
    ).map((c) => [c.type, [c.status, c.reason]]),
  );

describe("Reconciler", () => {
  it("installs the webhook configuration, writes status, and is idempotent", async () => {
    const { kcp, reconciler } = setup();
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    const vwc = kcp.vwcs.get(`${NET}/dependency-controller`);
    assert.equal(vwc?.webhooks?.[0]?.clientConfig.url, `https://webhook:9443/validate/${NET}`);
    assert.equal(vwc?.webhooks?.[0]?.clientConfig.caBundle, "Q0Ex");
    assert.deepEqual(ruleStatus(kcp).Ready, ["True", "Ready"]);
    assert.equal((kcp.rules.get(`${COMPUTE}/vm`)?.status as { dependencyCount: number }).dependencyCount, 1);
    const writes = kcp.writes.length;
    assert.deepEqual(await reconciler.reconcile(), {});
    assert.equal(kcp.writes.length, writes, `second pass wrote: ${kcp.writes.slice(writes).join(", ")}`);
  });

  it("looks again soon while a rule waits for the webhook's first list of its type, and not once it is indexed", async () => {
    const { kcp, reconciler, deps } = setup();
    kcp.addRule(vmRule());
    const report: IndexReport = {};
    deps.readIndexReport = () => Promise.resolve(report);
    assert.deepEqual(await reconciler.reconcile(), { requeueAfterMs: INDEX_POLL_MS });
    assert.deepEqual(ruleStatus(kcp).Ready, ["False", "NotReported"]);
    const dependent = parseRule(kcp.rules.get(`${COMPUTE}/vm`)!)!.dependent!;
    report[dependentTypeKey({ ...dependent, exportCluster: COMPUTE })] = { state: "ready" };
    assert.deepEqual(await reconciler.reconcile(), {});
    assert.deepEqual(ruleStatus(kcp).Ready, ["True", "Ready"]);
  });

  it("computes status from its own verdicts, never from the status an author wrote on the rule", async () => {
    const { kcp, reconciler, deps } = setup();
    kcp.addRule(vmRule());
    const dependent = parseRule(kcp.rules.get(`${COMPUTE}/vm`)!)!.dependent!;
    const key = dependentTypeKey({ ...dependent, exportCluster: COMPUTE });
    deps.readIndexReport = () => Promise.resolve({ [key]: { state: "failing", reason: "Forbidden" } });
    // The author forges "revoked, failing closed until 2099" (and a transition time in the future) on its status.
    const forged = {
      type: "DependentsIndexed",
      status: "False",
      reason: "IndexRevoked",
      message: "forged",
      observedGeneration: 1,
      lastTransitionTime: "2099-01-01T00:00:00Z",
    };
    kcp.rules.get(`${COMPUTE}/vm`)!.status = { conditions: [forged] };
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).DependentsIndexed, ["False", "IndexForbidden"]);
    const written = (kcp.rules.get(`${COMPUTE}/vm`)!.status as { conditions: Condition[] }).conditions;
    assert.ok(
      written.every((c) => c.lastTransitionTime <= "2026-01-01T00:00:00Z"),
      "no forged time carried",
    );
    const verdict = (deps.verdicts as MemoryVerdictBook).kept.rules.get(`${COMPUTE}/vm`);
    assert.equal(verdict?.conditions.DependentsIndexed?.reason, "IndexForbidden");
    // Forging it again changes nothing the controller keeps; the status is written back to the truth.
    kcp.rules.get(`${COMPUTE}/vm`)!.status = { conditions: [forged] };
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).DependentsIndexed, ["False", "IndexForbidden"]);
  });

  it("does not enforce a rule whose dependent its workspace does not serve, and says which field", async () => {
    const { kcp, reconciler } = setup();
    kcp.addRule(ruleObject(COMPUTE, "vm", { resource: "virtualmachines", kind: "VM" }, [{ resource: "vpcs" }]));
    await reconciler.reconcile();
    assert.equal(kcp.vwcs.size, 0, "nothing installed for an invalid dependent");
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["False", "DependentInvalid"]);
    assert.deepEqual(ruleStatus(kcp).Ready, ["False", "DependentInvalid"]);
    const message = (
      kcp.rules.get(`${COMPUTE}/vm`)?.status as { conditions: { type: string; message: string }[] }
    ).conditions.find((c) => c.type === "ReferencesValid")?.message;
    assert.equal(
      message,
      "spec.dependent.kind: APIExport compute.test.io in this rule's workspace serves virtualmachines as kind " +
        "VirtualMachine, not VM",
    );
  });

  it("leaves out a dependency its provider does not export, and keeps the rule's other dependencies", async () => {
    const { kcp, reconciler, resolutions } = setup();
    resolutions.set("root:storage", { ok: true, cluster: logicalClusterName("storage") });
    kcp.servedBy.set("storage", A);
    kcp.addRule(vmRule([{ resource: "vpcs" }, { resource: "volumes", path: "root:storage" }]));
    await reconciler.reconcile();
    assert.deepEqual([...kcp.vwcs.keys()], [`${NET}/dependency-controller`]);
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["False", "DependencyInvalid"]);
    assert.equal(ruleStatus(kcp).Ready?.[0], "False");
  });

  it("keeps protection installed when it may not read a provider's exports, and says what consent is missing", async () => {
    const { kcp, reconciler } = setup();
    kcp.noConsent.add(NET);
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    assert.ok(kcp.vwcs.has(`${NET}/dependency-controller`));
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["Unknown", "CannotVerify"]);
    assert.deepEqual(ruleStatus(kcp).WebhooksInstalled, ["True", "Installed"]);
    // Ready says the rule refuses what it should: it does, as written, and the message says what went unchecked.
    assert.deepEqual(ruleStatus(kcp).Ready, ["True", "Ready"]);
    const ready = (kcp.rules.get(`${COMPUTE}/vm`)!.status as { conditions: Condition[] }).conditions[0]!;
    assert.match(ready.message, /^deletion protection is installed \(references unchecked: /);
  });

  it("a dependency provider admits rules by their workspace: others are not installed, and the verdict says so", async () => {
    const { kcp, reconciler, resolutions, deps } = setup();
    kcp.addRule(vmRule());
    const exportName = "network.test.io";
    const installed = () => kcp.vwcs.has(`${NET}/dependency-controller`);
    const excluded = () => (deps.verdicts as MemoryVerdictBook).kept.rules.get(`${COMPUTE}/vm`)?.excluded;
    assert.ok(kcp.exports.has(exportName), "the fake kcp serves the network export");
    // Admitted by path: the compute provider's workspace resolves to the rule's cluster.
    resolutions.set("root:compute-provider", { ok: true, cluster: COMPUTE });
    kcp.ruleAuthors.set(exportName, "root:someone-else, root:compute-provider");
    await reconciler.reconcile();
    assert.ok(installed());
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["True", "Valid"]);
    // Admitted by nobody (an empty list): not installed, not enforced by the webhook either, and the rule says why.
    kcp.ruleAuthors.set(exportName, "");
    await reconciler.reconcile();
    assert.equal(installed(), false);
    assert.deepEqual(excluded(), [0]);
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["False", "DependencyInvalid"]);
    const refs = (kcp.rules.get(`${COMPUTE}/vm`)!.status as { conditions: Condition[] }).conditions;
    assert.match(refs.find((c) => c.type === "ReferencesValid")!.message, /does not admit rules of this workspace/);
    // A listed path that cannot be resolved now: the check cannot be made, so protection stays as it is.
    kcp.ruleAuthors.set(exportName, "root:unreadable");
    resolutions.set("root:unreadable", { ok: false, transient: true, reason: "503" });
    await reconciler.reconcile();
    assert.ok(installed());
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["Unknown", "CannotVerify"]);
    // No annotation: everyone, as with the Go original's manifests.
    kcp.ruleAuthors.delete(exportName);
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["True", "Valid"]);
    assert.equal(excluded(), undefined);
  });

  it("a rule whose author declined the checks is Ready exactly when every webhook replica enforces it", async () => {
    const { kcp, reconciler, deps } = setup();
    kcp.noConsent.add(COMPUTE);
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["False", "ChecksDeclined"]);
    assert.deepEqual(ruleStatus(kcp).Ready, ["False", "ChecksDeclined"]);
    deps.readWebhookSettings = () => Promise.resolve({ lookup: "auto", enforceUnverified: true });
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).ReferencesValid, ["Unknown", "ChecksDeclined"]);
    assert.deepEqual(ruleStatus(kcp).Ready, ["True", "Ready"]);
    deps.readWebhookSettings = () => Promise.resolve({ lookup: "auto", enforceUnverified: false });
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp).Ready, ["False", "ChecksDeclined"]);
  });

  it("prunes a deleted rule's configuration in one pass although another rule names a missing workspace", async () => {
    const { kcp, reconciler, resolutions } = setup();
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    assert.ok(kcp.vwcs.has(`${NET}/dependency-controller`));
    kcp.rules.clear();
    kcp.addRule(
      ruleObject(COMPUTE, "typo", { resource: "virtualmachines" }, [{ resource: "vpcs", path: "root:nope" }]),
    );
    resolutions.set("root:nope", { ok: false, reason: "workspace root:nope not found" });
    await reconciler.reconcile();
    assert.equal(kcp.vwcs.has(`${NET}/dependency-controller`), false);
    // A transient failure holds only the workspace that path last named, not every other one.
    kcp.rules.clear();
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    kcp.servedBy.set("other", A);
    kcp.seedVwc(logicalClusterName("other"), "dependency-controller", true);
    kcp.vwcs.get("other/dependency-controller")!.metadata.annotations![WORKSPACE_PATHS_ANNOTATION] = "root:other";
    resolutions.set("root:network-provider", { ok: false, transient: true, reason: "kcp unreachable" });
    await reconciler.reconcile();
    assert.deepEqual([...kcp.vwcs.keys()], [`${NET}/dependency-controller`]);
  });

  it("does nothing until both informers have synced", async () => {
    const { kcp, reconciler, state } = setup();
    kcp.addRule(vmRule());
    kcp.seedVwc(logicalClusterName("orphan"), "dependency-controller", true);
    state.synced = false;
    assert.deepEqual(await reconciler.reconcile(), { requeueAfterMs: 1_000 });
    assert.deepEqual(kcp.writes, []);
  });

  it("writes nothing without the leader lease", async () => {
    const { kcp, reconciler, state } = setup();
    kcp.addRule(vmRule());
    state.leader = false;
    await reconciler.reconcile();
    assert.deepEqual(kcp.writes, []);
  });

  it("deletes an orphan of ours and leaves a configuration without our label alone", async () => {
    const { kcp, reconciler } = setup();
    kcp.servedBy.set("old", A);
    kcp.servedBy.set("foreign", A);
    kcp.seedVwc(logicalClusterName("old"), "dependency-controller", true);
    kcp.seedVwc(logicalClusterName("foreign"), "dependency-controller", false);
    await reconciler.reconcile();
    assert.deepEqual([...kcp.vwcs.keys()], ["foreign/dependency-controller"]);
    assert.deepEqual(kcp.writes, [
      "DELETE old/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/dependency-controller",
    ]);
  });

  it("defers deletions while a workspace path fails to resolve for a transient reason", async () => {
    const { kcp, reconciler, resolutions } = setup();
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    resolutions.set("root:network-provider", { ok: false, transient: true, reason: "not allowed to read workspace" });
    await reconciler.reconcile();
    assert.ok(kcp.vwcs.has(`${NET}/dependency-controller`), "kept while the path cannot be resolved");
    assert.deepEqual(ruleStatus(kcp).WorkspacesResolved, ["False", "ResolutionFailed"]);
    // A definite answer (the workspace is gone) lets it go.
    resolutions.delete("root:network-provider");
    await reconciler.reconcile();
    assert.equal(kcp.vwcs.has(`${NET}/dependency-controller`), false);
  });

  it("updates the existing configuration when the CA bundle rotates or a rule drops a dependency", async () => {
    const { kcp, reconciler, state } = setup();
    kcp.addRule(vmRule([{ resource: "vpcs" }, { resource: "subnets" }]));
    await reconciler.reconcile();
    state.ca = "bmV3";
    kcp.addRule(vmRule([{ resource: "vpcs" }]));
    await reconciler.reconcile();
    const webhook = kcp.vwcs.get(`${NET}/dependency-controller`)?.webhooks?.[0];
    assert.equal(webhook?.clientConfig.caBundle, "bmV3");
    assert.deepEqual(
      webhook?.rules?.map((r) => r.resources[0]),
      ["vpcs"],
    );
  });

  it("finds the shard endpoint serving a provider workspace by trying each, and remembers it", async () => {
    const { kcp, reconciler } = setup();
    kcp.servedBy.set(NET, B); // rules live on shard A, the provider on shard B
    kcp.addRule(vmRule());
    await reconciler.reconcile();
    assert.ok(kcp.vwcs.has(`${NET}/dependency-controller`));
    assert.deepEqual(ruleStatus(kcp).WebhooksInstalled, ["True", "Installed"]);
  });

  it("reports a failed install in status, drops the resolver cache for that cluster, and fails the pass", async () => {
    const { kcp, reconciler, invalidated } = setup();
    kcp.addRule(vmRule());
    kcp.servedBy.delete(NET); // bound nowhere: every endpoint answers 403
    await assert.rejects(reconciler.reconcile(), /webhook configuration writes failed in 1 workspace/);
    assert.deepEqual(invalidated, [NET]);
    const status = kcp.rules.get(`${COMPUTE}/vm`)?.status as { conditions: { type: string; message: string }[] };
    assert.match(
      status.conditions.find((c) => c.type === "WebhooksInstalled")!.message,
      /^root:network-provider: 403 Forbidden \(the workspace must bind APIExport dependencies\.opendefense\.cloud/,
    );
  });

  it("says so when a configuration with our name but without our label is in the way", async () => {
    const { kcp, reconciler } = setup();
    kcp.seedVwc(NET, "dependency-controller", false);
    kcp.addRule(vmRule());
    await assert.rejects(reconciler.reconcile());
    assert.equal(kcp.vwcs.get(`${NET}/dependency-controller`)?.metadata.labels?.[MANAGED_BY_LABEL], undefined);
    const status = kcp.rules.get(`${COMPUTE}/vm`)?.status as { conditions: { type: string; message: string }[] };
    assert.match(
      status.conditions.find((c) => c.type === "WebhooksInstalled")!.message,
      /not managed by this controller/,
    );
  });

  it("reports a dependency cycle between two rules in both rules' status", async () => {
    const { kcp, reconciler, resolutions } = setup();
    resolutions.set("root:compute-provider", { ok: true, cluster: COMPUTE });
    kcp.addRule(vmRule());
    kcp.addRule(
      ruleObject(COMPUTE, "vpc", { group: "network.test.io", resource: "vpcs", kind: "VPC" }, [
        { resource: "virtualmachines", group: "compute.test.io", path: "root:compute-provider" },
      ]),
    );
    await reconciler.reconcile();
    assert.deepEqual(ruleStatus(kcp, "vm").Acyclic, ["False", "CycleDetected"]);
    assert.deepEqual(ruleStatus(kcp, "vpc").Acyclic, ["False", "CycleDetected"]);
    // Protection stays installed on both sides.
    assert.ok(kcp.vwcs.has(`${NET}/dependency-controller`) && kcp.vwcs.has(`${COMPUTE}/dependency-controller`));
  });

  it("writes a status it cannot improve only once", async () => {
    const { kcp, reconciler } = setup();
    kcp.addRule(vmRule([{ resource: "vpcs", path: "root:nowhere" }]));
    await reconciler.reconcile();
    const after = kcp.writes.length;
    await reconciler.reconcile();
    assert.equal(kcp.writes.length, after);
    assert.deepEqual(ruleStatus(kcp).WorkspacesResolved, ["False", "ResolutionFailed"]);
  });
});
