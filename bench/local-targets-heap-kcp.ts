// The stand-in of bench/local-targets-heap.ts: one dependent export's virtual workspace over HTTPS, run as a child
// process so that its memory is not the probe's. Its consumers and their configurations are
// bench/local-targets-kcp.ts's (a write refused where a consumer declined); what it answers is shaped and sized as
// kcp v0.30.0 answers: bindings with managedFields and status conditions, configurations with what the API server
// adds, lists paged by limit/continue. Watches are accepted and stay silent.
import { readFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { parseRule } from "../src/api/rule.ts";
import { CLUSTER_ANNOTATION, type LogicalClusterName } from "../src/api/types.ts";
import { localConfiguration, localTargetSets, planLocalWrites, VWC_CLAIM } from "../src/controller/local-targets.ts";
import { consumersOf, ruleObject } from "./local-targets.ts";
import type { ExportConsumers } from "./local-targets-kcp.ts";

export const CA = Buffer.from("x".repeat(820)).toString("base64");
const stamp = "2026-11-28T10:00:00Z";

const fields = (keys: string[]) => Object.fromEntries(keys.map((k) => [`f:${k}`, {}]));

/** What kcp v0.30.0 records of who wrote a binding: its client's spec and kcp's status. */
const BINDING_MANAGED_FIELDS = [
  {
    apiVersion: "apis.kcp.io/v1alpha2",
    fieldsType: "FieldsV1",
    fieldsV1: { "f:spec": { ".": {}, "f:permissionClaims": {}, "f:reference": fields(["export"]) } },
    manager: "kubectl-client-side-apply",
    operation: "Update",
    time: stamp,
  },
  {
    apiVersion: "apis.kcp.io/v1alpha2",
    fieldsType: "FieldsV1",
    fieldsV1: {
      "f:status": fields([
        "apiExportClusterName",
        "appliedPermissionClaims",
        "boundResources",
        "conditions",
        "exportPermissionClaims",
        "phase",
      ]),
    },
    manager: "kcp",
    operation: "Update",
    subresource: "status",
    time: stamp,
  },
];

/** An APIBinding of the export as kcp v0.30.0's virtual workspace lists it: what the controller reads, and the rest. */
export function kcpBinding(cluster: LogicalClusterName, accepted: boolean, i: number): unknown {
  const claim = { ...VWC_CLAIM, selector: { matchAll: true }, verbs: ["*"] };
  const condition = (type: string) => ({ lastTransitionTime: stamp, status: "True", type });
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: {
      annotations: { [CLUSTER_ANNOTATION]: cluster, "kcp.io/path": `root:lt-${String(i).padStart(4, "0")}` },
      creationTimestamp: stamp,
      finalizers: ["apis.kcp.io/apibinding-finalizer"],
      generation: 1,
      labels: { "internal.apis.kcp.io/export": "2sl9zo8cbz6pmhd3" },
      managedFields: BINDING_MANAGED_FIELDS,
      name: "vault.test.io",
      resourceVersion: String(1000 + i),
      uid: `8c3e1a52-7f4b-4d0e-9a61-${String(i).padStart(12, "0")}`,
    },
    spec: {
      permissionClaims: [{ ...claim, state: accepted ? "Accepted" : "Rejected" }],
      reference: { export: { name: "vault.test.io", path: "root:lt-provider" } },
    },
    status: {
      apiExportClusterName: "2arcprovider0000",
      appliedPermissionClaims: accepted ? [claim] : [],
      boundResources: [
        {
          group: "vault.test.io",
          resource: "endpoints",
          schema: { UID: "4d2f", identityHash: "a".repeat(64), name: "v260101-1a2b3c4d.endpoints.vault.test.io" },
          storageVersions: ["v1alpha1"],
        },
      ],
      conditions: ["APIExportValid", "BindingUpToDate", "InitialBindingCompleted", "PermissionClaimsApplied", "Ready"]
        .map(condition)
        .concat([condition("PermissionClaimsValid")]),
      exportPermissionClaims: [claim],
      phase: "Bound",
    },
  };
}

/** A stored configuration as a kcp list returns it: with what the API server adds (managedFields, uid, times). */
export function asListed(object: Record<string, unknown>, i: number): unknown {
  const meta = object["metadata"] as Record<string, unknown>;
  const managed = {
    apiVersion: "admissionregistration.k8s.io/v1",
    fieldsType: "FieldsV1",
    fieldsV1: {
      "f:metadata": { "f:annotations": {}, "f:labels": {} },
      "f:webhooks": { 'k:{"name":"dependencies.opendefense.cloud"}': { "f:clientConfig": {}, "f:rules": {} } },
    },
    manager: "dependency-controller",
    operation: "Update",
    time: stamp,
  };
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    ...object,
    metadata: { ...meta, creationTimestamp: stamp, generation: 1, uid: `uid-${i}`, managedFields: [managed] },
  };
}

/** `?limit=&continue=` over items, as the API server pages a list (continue: the next offset). */
function page(
  items: unknown[],
  url: URL,
): { metadata: { resourceVersion: string; continue?: string }; items: unknown[] } {
  const from = Number(url.searchParams.get("continue") ?? 0);
  const limit = Number(url.searchParams.get("limit") ?? items.length) || items.length;
  const next = from + limit < items.length ? { continue: String(from + limit) } : {};
  return { metadata: { resourceVersion: "7", ...next }, items: items.slice(from, from + limit) };
}

/** The stand-in's answer to one request; watches stay open and send nothing. */
async function answer(kcp: ExportConsumers, method: string, url: URL, body: string): Promise<[number, unknown]> {
  const m = /\/clusters\/([^/]+)(\/.*)$/.exec(url.pathname);
  if (!m) return [404, {}];
  const [, cluster, rest] = m as unknown as [string, string, string];
  const all = cluster === "*";
  if (all && rest.endsWith("/apibindings")) {
    return [
      200,
      page(
        [...kcp.consumers].map(([c, ok], i) => kcpBinding(c, ok, i)),
        url,
      ),
    ];
  }
  const client = kcp.client(cluster as LogicalClusterName);
  const path = rest + (all ? url.search : "");
  try {
    const out = await client.request<{ items?: Record<string, unknown>[] }>(method, path, {
      ...(body ? { body: JSON.parse(body) as unknown } : {}),
    });
    if (all) return [200, page((out.items ?? []).map(asListed), url)];
    return [method === "POST" ? 201 : 200, out];
  } catch (err) {
    const status = (err as { status?: number }).status ?? 500;
    return [status, { kind: "Status", code: status, message: String(err) }];
  }
}

/** The rules of the probe: bench/local-targets.ts's four on one export (Secrets and a ConfigMap). */
export const RULES = [0, 1, 2, 3].map((i) => parseRule(ruleObject(i))!);
export const WEBHOOK = "https://dependency-webhook.dependency-system.svc:9443";

export function serve(o: Options, certDir: string): void {
  const kcp = consumersOf(o.consumers, o.declined);
  // As a restarted controller finds them: every accepting consumer has the configuration already.
  const set = localTargetSets(RULES)[0]!;
  if (o.installed) kcp.apply(planLocalWrites(localConfiguration(set, WEBHOOK, CA), kcp.view()));
  const server = https.createServer(
    { cert: readFileSync(path.join(certDir, "tls.crt")), key: readFileSync(path.join(certDir, "tls.key")) },
    (req, res) => {
      const url = new URL(req.url ?? "/", "https://stand-in");
      if (url.searchParams.get("watch") === "true") {
        res.writeHead(200, { "content-type": "application/json" });
        return; // open until the client goes
      }
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        void answer(kcp, req.method ?? "GET", url, body).then(([status, out]) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(out));
        });
      });
    },
  );
  server.listen(0, "127.0.0.1", () => {
    const addr = server.address();
    process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
  });
}

export interface Options {
  consumers: number;
  declined: number;
  passes: number;
  /** The configurations are there before the first pass (a steady state), or not (the first pass writes them). */
  installed: boolean;
}

export const flags = (o: Options): string[] => [
  `--consumers=${o.consumers}`,
  `--declined=${o.declined}`,
  `--passes=${o.passes}`,
  ...(o.installed ? ["--installed"] : []),
];
