// Local targets on a real kcp (issue 31): the provider's API (Endpoints naming a Secret and a ConfigMap of the
// consumer workspace) with an export that claims ValidatingWebhookConfigurations, its grant to the controller, a rule
// whose dependencies are those core types, and consumers binding it with their own tokens, accepting or declining
// the claim. Used by provider-initializer.test.ts on its shared kcp.
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, type KObject } from "../../tools/kcp/api.ts";
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
