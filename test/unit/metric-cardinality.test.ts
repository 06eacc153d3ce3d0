// No metric of ours grows with workspaces (issue 30): the metrics registries of both binaries, built as their runtimes
// build them, after the same workload over 10 and over 1,000 workspaces, hold the same series, and no label value
// names a workspace. The webhook: DELETE reviews from every consumer workspace over the real HTTPS server, decided
// through the real handler, the --lookup=auto finder and the dependents index (its watches fake, filled with a VM
// in every other workspace and, in every tenth, one naming too many VPCs), and a rule review per ten workspaces;
// the rules stay the same (a label per rule is allowed, up to MAX_RULE_LABELS). The controller: a rule in each of the
// workspaces, protecting a resource of its own provider workspace, reconciled in one pass (a webhook configuration
// written in every provider workspace, a status in every rule).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import { CLUSTER_ANNOTATION } from "../../src/api/types.ts";
import { DEPENDENCY_RULES_PATH, WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import type { RuleObject } from "../../src/controller/plan.ts";
import { Reconciler } from "../../src/controller/reconciler.ts";
import { APIEXPORTS_PATH, APIRESOURCESCHEMAS_PATH } from "../../src/kcp/exports.ts";
import { ApiError, type RequestOptions } from "../../src/kcp/rest.ts";
import { WorkspaceResolver } from "../../src/kcp/workspaces.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { allow } from "../../src/webhook/admission.ts";
import { createAdmissionHandler } from "../../src/webhook/deletion/handler.ts";
import { HybridDependentFinder, registerLookupSourceMetric } from "../../src/webhook/deletion/hybrid.ts";
import { endpointRefusalCounter } from "../../src/webhook/deletion/index/export-endpoints.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { registerIndexMetrics } from "../../src/webhook/deletion/index/metrics.ts";
import { reportOf } from "../../src/webhook/deletion/index/report.ts";
import { createOpenRequests, startWebhookServer } from "../../src/webhook/http/server.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { reportEndpoints } from "../../src/webhook/rules/endpoint-metrics.ts";
import type { RuleEntry, RuleRegistry } from "../../src/webhook/rules/registry.ts";
import { MemoryVerdictBook } from "../support/verdict-book.ts";
import { fp, ruleObject, VM_DEPENDENT } from "./helpers-rules.ts";
import { CountingKcp } from "./resolver-fake-kcp.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

let dir: string;
let tls: { certFile: string; keyFile: string };
before(() => {
  dir = mkdtempSync(join(tmpdir(), "metric-cardinality-"));
  tls = { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") };
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", tls.keyFile,
    "-out", tls.certFile, "-days", "1", "-subj", "/CN=serving", "-addext", "subjectAltName=IP:127.0.0.1",
  ], { stdio: "ignore" }); // prettier-ignore
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Every workspace of the workload is named with this, so a label value naming one is found. */
const WS = "tenantws";
const consumer = (i: number) => `${WS}-c${i}`;

/** Series per metric, and every label value seen. */
async function census(registry: Registry): Promise<{ series: Map<string, number>; values: Set<string> }> {
  const series = new Map<string, number>();
  const values = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    series.set(m.name, m.values.length);
    for (const v of m.values) for (const l of Object.values(v.labels)) values.add(String(l));
  }
  return { series, values };
}

const sum = async (registry: Registry, name: string, labels: Record<string, string> = {}) =>
  ((await registry.getSingleMetric(name)?.get())?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((n, v) => n + v.value, 0);

// ---- the webhook ----

const ENTRY: RuleEntry = {
  rule: "net1/vm-needs-vpc",
  dependent: VM_DEPENDENT,
  fieldPaths: [fp(".spec.vpcRef.name")],
  enforcement: "Deny",
};
/** The same rule for every DELETE of a VPC, whatever the workspace: the rules do not grow with the workload. */
const RULES = { find: () => ({ entries: [ENTRY], pending: [] }) } as unknown as RuleRegistry;

/** The index of VMs: one naming my-vpc in every other workspace, one naming 5,000 VPCs in every tenth. */
function indexOver(workspaces: number): DependentsIndex {
  const { factory, built } = fakeWatches();
  const index = new DependentsIndex({ watch: factory, logger: silentLogger(), confirmRate: { burst: 1e6 } });
  index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name", ".spec.vpcRef.name")));
  const objects: unknown[] = [];
  for (let i = 0; i < workspaces; i++) {
    if (i % 2 === 0) objects.push(vmObject(consumer(i), `vm-${i}`, "my-vpc"));
    if (i % 10 === 5) {
      const hostile = vmObject(consumer(i), `many-${i}`, "x") as { spec: { nics: unknown[] } };
      hostile.spec.nics = Array.from({ length: 5_000 }, (_, n) => ({ vpcRef: { name: `vpc-${n}` } }));
      objects.push(hostile);
    }
  }
  built[0]!.watch.endpoint("https://shard-1", objects);
  return index;
}

const deleteReview = (i: number) =>
  JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `uid-${i}`,
      operation: "DELETE",
      resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
      name: "my-vpc",
      oldObject: { metadata: { name: "my-vpc", annotations: { [CLUSTER_ANNOTATION]: consumer(i) } } },
      userInfo: { username: `user-${consumer(i)}` },
    },
  });

function post(port: number, agent: https.Agent, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        agent,
        rejectUnauthorized: false,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => res.resume().on("end", () => resolve(res.statusCode ?? 0)),
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The webhook's registry (as src/webhook/runtime.ts builds it, default process metrics aside) after the workload. */
async function webhookWorkload(workspaces: number): Promise<Registry> {
  const registry = new Registry();
  const metrics = createWebhookMetrics(registry);
  const index = indexOver(workspaces);
  registerIndexMetrics(registry, index);
  const finder = new HybridDependentFinder({
    index,
    live: { find: () => Promise.reject(new Error("no live list in this test")) },
    indexState: (key) => reportOf(index.health())[key],
    logger: silentLogger(),
  });
  registerLookupSourceMetric(registry, finder);
  // Refused slice URLs are counted by reason only, however many workspaces write them.
  const refused = endpointRefusalCounter(registry);
  for (let i = 0; i < workspaces; i++) refused(i % 2 === 0 ? "unknown-origin" : "wrong-path");
  reportEndpoints(metrics.ruleEndpointUnsynced, ["https://shard-1/vw", "https://shard-2/vw"], new Set());
  const server = await startWebhookServer({
    host: "127.0.0.1",
    port: 0,
    tls,
    handler: createAdmissionHandler({ registry: () => RULES, finder, logger: silentLogger(), metrics }),
    ruleHandler: () => Promise.resolve(allow("rule-valid")),
    logger: silentLogger(),
    metrics,
    openRequests: createOpenRequests(registry),
    onRefusal: (reason) => metrics.refusals.inc({ reason }),
  });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
  try {
    const codes = await Promise.all(
      Array.from({ length: workspaces }, (_, i) => post(server.port, agent, "/validate/net1", deleteReview(i))),
    );
    assert.ok(codes.every((c) => c === 200));
    for (let i = 0; i < workspaces; i += 10)
      assert.equal(await post(server.port, agent, "/validate-rules", deleteReview(i)), 200);
  } finally {
    agent.destroy();
    await server.close();
  }
  return registry;
}

// ---- the controller ----

const ENDPOINT = "https://shard-1/services/apiexport/dep/dependencies.opendefense.cloud";

/** kcp through the dep-ctrl export's virtual workspace: every workspace serves both exports, and takes our writes. */
function controllerKcp() {
  let rv = 1;
  const exports: Record<string, [string, string]> = {
    "compute.test.io": ["virtualmachines", "VirtualMachine"],
    "network.test.io": ["vpcs", "VPC"],
  };
  const fail = (method: string, path: string, status: number, reason: string): never => {
    throw new ApiError(method, path, status, reason, reason);
  };
  const answer = (method: string, path: string, opts: RequestOptions): unknown => {
    if (method === "GET" && path.startsWith(APIEXPORTS_PATH)) {
      const name = path.slice(APIEXPORTS_PATH.length + 1);
      const [resource] = exports[name] ?? fail(method, path, 404, "NotFound");
      return { spec: { resources: [{ group: name, name: resource, schema: `v1.${resource}.${name}` }] } };
    }
    if (method === "GET" && path.startsWith(APIRESOURCESCHEMAS_PATH)) {
      const group = path
        .slice(APIRESOURCESCHEMAS_PATH.length + 1)
        .split(".")
        .slice(2)
        .join(".");
      const [, kind] = exports[group] ?? fail(method, path, 404, "NotFound");
      return { spec: { names: { kind }, versions: [{ name: "v1", served: true }] } };
    }
    if (method === "GET" && path.startsWith(WEBHOOK_CONFIGURATIONS_PATH)) return fail(method, path, 404, "NotFound");
    if (method === "POST" || (method === "PUT" && path.startsWith(DEPENDENCY_RULES_PATH))) {
      const body = structuredClone(opts.body as RuleObject);
      return { ...body, metadata: { ...body.metadata, uid: `uid-${rv}`, resourceVersion: String(++rv) } };
    }
    return fail(method, path, 405, "MethodNotAllowed");
  };
  return {
    request: <T>(method: string, path: string, opts: RequestOptions = {}) =>
      Promise.resolve().then(() => answer(method, path, opts) as T),
  };
}

/** The controller's registry after one pass over a rule in each of `workspaces` workspaces. */
async function controllerWorkload(workspaces: number): Promise<Registry> {
  const registry = new Registry();
  const kcp = new CountingKcp();
  const rules = Array.from({ length: workspaces }, (_, i) => {
    kcp.workspaces.set(`root:${WS}-p${i}`, `${WS}-p${i}`);
    const rule = ruleObject(`${WS}-r${i}`, "vm", { resource: "virtualmachines" }, [
      { resource: "vpcs", path: `root:${WS}-p${i}` },
    ]) as unknown as RuleObject;
    rule.metadata.resourceVersion = "1";
    return { endpoint: ENDPOINT, object: rule };
  });
  const client = controllerKcp();
  const reconciler = new Reconciler({
    rules: { listWithEndpoints: () => rules, hasSynced: () => true, endpoints: () => [ENDPOINT] },
    configurations: { listWithEndpoints: () => [], hasSynced: () => true },
    resolver: new WorkspaceResolver({ base: kcp }),
    clientFor: () => client,
    webhookBaseUrl: "https://webhook:9443",
    caBundle: () => "Q0E=",
    mayWrite: () => true,
    verdicts: new MemoryVerdictBook(),
    exportName: "dependencies.opendefense.cloud",
    logger: silentLogger(),
    metrics: createMetrics(registry),
  });
  await reconciler.reconcile();
  return registry;
}

// ---- the census ----

describe("metric cardinality: no series per workspace", () => {
  it("the webhook's series are the same after reviews from 10 and from 1,000 workspaces", async () => {
    const few = await census(await webhookWorkload(10));
    const many = await webhookWorkload(1_000);
    const counted = await census(many);
    assert.deepEqual(Object.fromEntries(counted.series), Object.fromEntries(few.series));
    assert.deepEqual(
      [...counted.values].filter((v) => v.includes(WS)),
      [],
      "no label value names a workspace",
    );
    // The workload happened: every review was decided and counted, the index held what it was given.
    assert.equal(await sum(many, "dependency_webhook_decisions_total"), 1_000 + 100);
    assert.equal(await sum(many, "dependency_webhook_decisions_total", { reason: "referenced" }), 500);
    assert.equal(await sum(many, "dependency_webhook_decisions_total", { reason: "index-unavailable" }), 100);
    assert.equal(await sum(many, "dependency_webhook_index_workspaces_unreadable", { reason: "names" }), 100);
    assert.equal(await sum(many, "dependency_webhook_lookup_sources", { source: "index" }), 1);
  });

  it("the controller's series are the same after a pass over rules in 10 and in 1,000 workspaces", async () => {
    const few = await census(await controllerWorkload(10));
    const many = await controllerWorkload(1_000);
    const counted = await census(many);
    assert.deepEqual(Object.fromEntries(counted.series), Object.fromEntries(few.series));
    assert.deepEqual(
      [...counted.values].filter((v) => v.includes(WS)),
      [],
      "no label value names a workspace",
    );
    assert.equal(await sum(many, "dependency_controller_rules"), 1_000);
    assert.equal(
      await sum(many, "dependency_controller_webhook_configuration_writes_total", { action: "create" }),
      1_000,
    );
  });
});
