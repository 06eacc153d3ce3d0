// Local targets on a real kcp (issue 31): the provider's API (Endpoints naming a Secret and a ConfigMap of the
// consumer workspace) with an export that claims ValidatingWebhookConfigurations, its grant to the controller, a rule
// whose dependencies are those core types, and consumers binding it with their own tokens, accepting or declining
// the claim; the plugin as kubectl runs it, and what the test watches while the plugin tears a consumer down. Used by
// provider-initializer.test.ts on its shared kcp.
import { execFile } from "node:child_process";
import path from "node:path";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, type KObject } from "../../tools/kcp/api.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { bindGrant } from "../../tools/kcp/tenant.ts";
import { RBAC_VARS } from "../../tools/kcp/topology.ts";

export const VAULT_GROUP = "vault.test.io";
export const SECRETS = "/api/v1/namespaces/default/secrets";
export const CONFIGMAPS = "/api/v1/namespaces/default/configmaps";
const VWC_CLAIM = { group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations" };

/** Endpoints (spec.secretRef, spec.caRef) exported with the claim local targets need, and open to any binder. */
export function vaultApi(): KObject[] {
  const ref = { type: "object", properties: { name: { type: "string" } } };
  const names = { kind: "Endpoint", listKind: "EndpointList", plural: "endpoints", singular: "endpoint" };
  const schema = {
    type: "object",
    properties: { spec: { type: "object", properties: { secretRef: ref, caRef: ref } } },
  };
  const schemaName = `v1.endpoints.${VAULT_GROUP}`;
  return [
    {
      apiVersion: "apis.kcp.io/v1alpha1",
      kind: "APIResourceSchema",
      metadata: { name: schemaName },
      spec: {
        group: VAULT_GROUP,
        names,
        scope: "Namespaced",
        versions: [{ name: "v1", served: true, storage: true, schema }],
      },
    },
    {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIExport",
      metadata: { name: VAULT_GROUP },
      spec: {
        resources: [{ group: VAULT_GROUP, name: "endpoints", schema: schemaName, storage: { crd: {} } }],
        permissionClaims: [{ ...VWC_CLAIM, verbs: ["get", "list", "watch", "create", "update", "delete"] }],
      },
    },
    ...bindGrant(VAULT_GROUP),
  ];
}

/** The provider's grant to the controller (deploy/rbac/provider-local-targets.yaml), applied by the provider. */
export async function grantLocalTargets(provider: RestClient, text: string): Promise<void> {
  await apply(provider, text, { ...RBAC_VARS, DEPENDENT_EXPORT: VAULT_GROUP });
}

/** Endpoints depend on the Secret and the ConfigMap they name, in the consumer workspace itself. */
export const vaultRule = (): KObject =>
  dependencyRule(
    "endpoint-credentials",
    [
      { resource: "secrets", local: true, field: ".spec.secretRef.name" },
      { resource: "configmaps", local: true, field: ".spec.caRef.name" },
    ],
    { dependent: { group: VAULT_GROUP, kind: "Endpoint", resource: "endpoints" } },
  );

/** The consumer's own binding of the export, accepting or declining the claim. */
export async function bindVault(consumer: RestClient, providerPath: string, accept: boolean): Promise<void> {
  await apply(consumer, [
    {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIBinding",
      metadata: { name: VAULT_GROUP },
      spec: {
        reference: { export: { path: providerPath, name: VAULT_GROUP } },
        permissionClaims: [
          {
            ...VWC_CLAIM,
            verbs: ["get", "list", "watch", "create", "update", "delete"],
            selector: { matchAll: true },
            state: accept ? "Accepted" : "Rejected",
          },
        ],
      },
    },
  ]);
}

/** An Endpoint naming `secret` and `ca`, and the Secrets and ConfigMaps `held-*` and `free-*`. */
export function vaultObjects(): KObject[] {
  const meta = (name: string) => ({ name, namespace: "default" });
  return [
    ...["held-secret", "free-secret"].map((name) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(name),
      stringData: { token: "t" },
    })),
    ...["held-ca", "free-ca"].map((name) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: meta(name), data: {} })),
    {
      apiVersion: `${VAULT_GROUP}/v1`,
      kind: "Endpoint",
      metadata: meta("e1"),
      spec: { secretRef: { name: "held-secret" }, caRef: { name: "held-ca" } },
    },
  ];
}

/** An Endpoint's path in the consumer workspace's `default` namespace. */
export const ENDPOINTS = `/apis/${VAULT_GROUP}/v1/namespaces/default/endpoints`;
/** A finalizer the test holds on the Endpoint, as a backend would: the Secret must wait while it is Terminating. */
export const ENDPOINT_HOLD = `${VAULT_GROUP}/hold`;

/** `kubectl dependencies ...` as kubectl runs it (node and the plugin's entry), with the given connection flags. */
export function plugin(
  connection: string[],
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const entry = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [entry, ...args, ...connection],
      { timeout: 240_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

type Watched = {
  metadata: { name: string; resourceVersion: string; deletionTimestamp?: string; finalizers?: string[] };
};

/** When an object began to go (deletionTimestamp set, or DELETED) and when it went, by kcp's resourceVersions. */
export interface Going {
  deleting?: bigint;
  gone?: bigint;
}

/**
 * Records, by kcp's resourceVersions, when each object of `collections` (`<Kind>` → collection path) began to go
 * (deletionTimestamp or DELETED) and when it went, under `<Kind>/<name>`; `first` makes the entry of an object at its
 * first event (what else a test keeps of it). Resolves once every watch is open.
 */
export async function watchDeletes<S extends Going = Going>(
  ws: RestClient,
  collections: Record<string, string>,
  signal: AbortSignal,
  first: (object: Watched & { spec?: unknown }) => S = () => ({}) as S,
  seen = new Map<string, S>(),
): Promise<Map<string, S>> {
  const open = Object.entries(collections).map(
    ([kind, collection]) =>
      new Promise<void>((opened, failed) => {
        ws.watch<Watched & { spec?: unknown }>(
          collection,
          {},
          (ev) => {
            const id = `${kind}/${ev.object.metadata.name}`;
            const rv = BigInt(ev.object.metadata.resourceVersion);
            const s = seen.get(id) ?? first(ev.object);
            if ((ev.type === "DELETED" || ev.object.metadata.deletionTimestamp) && s.deleting === undefined)
              s.deleting = rv;
            if (ev.type === "DELETED") s.gone = rv;
            seen.set(id, s);
          },
          signal,
          opened,
        ).catch((err: unknown) => {
          if (!signal.aborted) failed(err instanceof Error ? err : new Error(String(err)));
        });
      }),
  );
  await Promise.all(open);
  return seen;
}

/**
 * The test as the Endpoints' backend: an Endpoint being deleted keeps ENDPOINT_HOLD for one more poll, then it is
 * released. Returns how many it held.
 */
export async function endpointBackend(ws: RestClient, signal: AbortSignal): Promise<number> {
  const noticed = new Set<string>();
  let released = 0;
  while (!signal.aborted) {
    for (const e of (await ws.listAll<Watched>(ENDPOINTS)).items) {
      if (!e.metadata.deletionTimestamp || !e.metadata.finalizers?.includes(ENDPOINT_HOLD)) continue;
      if (!noticed.has(e.metadata.name)) {
        noticed.add(e.metadata.name);
        continue;
      }
      await ws.request("PATCH", `${ENDPOINTS}/${e.metadata.name}`, {
        body: { metadata: { finalizers: null } },
        contentType: "application/merge-patch+json",
      });
      released++;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return released;
}
