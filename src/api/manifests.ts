// Pure builders of the kcp manifests that publish DependencyRules: the APIResourceSchema, the APIExport in the
// dep-ctrl workspace with the RBAC of its maximal permission policy, and the APIBinding every provider workspace
// applies. hack/generate.ts writes them to deploy/kcp/.
import { createHash } from "node:crypto";
import { canonicalJson } from "../util/json.ts";
import { stringify } from "yaml";
import { DEFAULT_EXPORT_NAME, GROUP, KIND, PLURAL, VERSION } from "./types.ts";
import { DEPENDENCY_RULE_SCHEMA, PRINTER_COLUMNS } from "./schema.ts";

export const SINGULAR = "dependencyrule";
export const LIST_KIND = `${KIND}List`;

/** The controller writes ValidatingWebhookConfigurations into provider workspaces through this claim. */
export const VWC_PERMISSION_CLAIM = {
  group: "admissionregistration.k8s.io",
  resource: "validatingwebhookconfigurations",
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
} as const;

/**
 * Read-only claims on the provider's own APIExports and APIResourceSchemas: a provider that accepts them consents to
 * the controller and the webhook checking that its rules name types it really serves (src/api/references.ts).
 * Bindings that accept only the webhook-configuration claim (the original's manifests) keep working; their rules
 * are then reported as not verifiable.
 */
export const EXPORT_READ_CLAIMS = [
  { group: "apis.kcp.io", resource: "apiexports", verbs: ["get", "list", "watch"] },
  { group: "apis.kcp.io", resource: "apiresourceschemas", verbs: ["get", "list", "watch"] },
] as const;

const claims = () => [VWC_PERMISSION_CLAIM, ...EXPORT_READ_CLAIMS].map((c) => ({ ...c, verbs: [...c.verbs] }));

/** Where the example APIBinding points when no path is given; replace it with the real dep-ctrl workspace path. */
export const DEFAULT_DEP_CTRL_PATH = "root:dep-ctrl";

type Manifest = Record<string, unknown>;

function schemaSpec(): Manifest {
  return {
    group: GROUP,
    names: { kind: KIND, listKind: LIST_KIND, plural: PLURAL, singular: SINGULAR },
    scope: "Cluster",
    versions: [
      {
        name: VERSION,
        served: true,
        storage: true,
        // kcp takes the OpenAPI schema itself here, not a CRD-style { openAPIV3Schema } wrapper.
        schema: DEPENDENCY_RULE_SCHEMA,
        subresources: { status: {} },
        additionalPrinterColumns: PRINTER_COLUMNS,
      },
    ],
  };
}

/**
 * `v<hash8>.dependencyrules.dependencies.opendefense.cloud`. APIResourceSchemas are immutable, so every schema change
 * must produce a new name (and the APIExport then points at it); a content hash does that without a release date.
 */
export function schemaName(spec: Manifest = schemaSpec()): string {
  const hash = createHash("sha256").update(canonicalJson(spec)).digest("hex").slice(0, 8);
  return `v${hash}.${PLURAL}.${GROUP}`;
}

export function apiResourceSchema(): Manifest {
  const spec = schemaSpec();
  return {
    apiVersion: "apis.kcp.io/v1alpha1",
    kind: "APIResourceSchema",
    metadata: { name: schemaName(spec) },
    spec,
  };
}

/**
 * The export's `maximalPermissionPolicy: {local: {}}`: in every workspace that binds it, kcp authorizes a request on
 * DependencyRules only if the caller, with `apis.kcp.io:binding:` before its name and groups, is also allowed it by
 * RBAC in the dep-ctrl workspace (`maximalPermissionsRbac`). That bound is what keeps a rule's status the
 * controller's: it grants no `dependencyrules/status`, so a provider that owns its workspace still cannot write it.
 * The controller writes status through the export's virtual workspace, which kcp authorizes on its own.
 */
export const MAXIMAL_PERMISSION_POLICY = { local: {} } as const;

/** kcp's prefix for the policy's users and groups (apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix). */
export const MAXIMAL_PERMISSION_PREFIX = "apis.kcp.io:binding:";

/** The ClusterRole (and its binding) of the policy's upper bound, in the dep-ctrl workspace. */
export const BINDER_ROLE_NAME = "dependencyrules-binders";

export function apiExport(exportName: string = DEFAULT_EXPORT_NAME): Manifest {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIExport",
    metadata: { name: exportName },
    spec: {
      resources: [{ group: GROUP, name: PLURAL, schema: schemaName(), storage: { crd: {} } }],
      permissionClaims: claims(),
      maximalPermissionPolicy: { ...MAXIMAL_PERMISSION_POLICY },
    },
  };
}

/**
 * The upper bound for everyone in a binding workspace: every verb on DependencyRules themselves, nothing on
 * `dependencyrules/status` (a rule in RBAC does not cover its subresources). Each caller's own RBAC in its workspace
 * still decides within the bound; without this role the policy would leave binders nothing on DependencyRules.
 */
export function maximalPermissionsRbac(): Manifest[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: BINDER_ROLE_NAME },
      rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ["*"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: BINDER_ROLE_NAME },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: BINDER_ROLE_NAME },
      subjects: [
        {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "Group",
          name: `${MAXIMAL_PERMISSION_PREFIX}system:authenticated`,
        },
      ],
    },
  ];
}

/**
 * The binding each provider workspace applies: the dependency provider (where the webhook is installed) and the
 * dependent provider (where its DependencyRules live). It must accept the claim, or the controller cannot write there.
 */
export function providerApiBinding(
  depCtrlPath: string = DEFAULT_DEP_CTRL_PATH,
  exportName = DEFAULT_EXPORT_NAME,
): Manifest {
  return {
    apiVersion: "apis.kcp.io/v1alpha2",
    kind: "APIBinding",
    metadata: { name: exportName },
    spec: {
      reference: { export: { path: depCtrlPath, name: exportName } },
      permissionClaims: claims().map((c) => ({ ...c, selector: { matchAll: true }, state: "Accepted" })),
    },
  };
}

/** The WorkspaceType whose workspaces are dependency providers from their creation (docs/getting-started.md, 4B). */
export const PROVIDER_WORKSPACE_TYPE = "dependency-provider";

/**
 * Workspaces of this type bind the dep-ctrl export by default (kcp's own initializer) and carry this type's
 * initializer, which the controller serves (--provider-workspace-type, src/controller/initializer.ts): it accepts every
 * claim of that binding, writes the index consent, and then lets the workspace become Ready. A type that extends it
 * (`spec.extend.with`) inherits both.
 */
export function providerWorkspaceType(
  depCtrlPath: string = DEFAULT_DEP_CTRL_PATH,
  exportName = DEFAULT_EXPORT_NAME,
): Manifest {
  return {
    apiVersion: "tenancy.kcp.io/v1alpha1",
    kind: "WorkspaceType",
    metadata: { name: PROVIDER_WORKSPACE_TYPE },
    spec: {
      initializer: true,
      // Implementing universal lets the type be a child of kcp's organization (and any type that allows universal).
      extend: { with: [{ name: "universal", path: "root" }] },
      defaultAPIBindings: [{ path: depCtrlPath, export: exportName }],
    },
  };
}

const HEADER =
  "# Generated by hack/generate.ts from src/api/schema.ts and src/api/manifests.ts. Do not edit;\n# run `npm run generate` (node hack/generate.ts) after changing the schema.\n";

const BINDING_NOTE =
  `# Example: apply in every provider workspace, the one whose resources are protected and the one whose\n` +
  `# DependencyRules live there. Replace ${DEFAULT_DEP_CTRL_PATH} with the workspace path holding the APIExport.\n` +
  `# Claims: validatingwebhookconfigurations (the deletion webhook is installed here) and read-only apiexports and\n` +
  `# apiresourceschemas (rules naming this workspace's exports are checked against what it really serves).\n`;

const POLICY_NOTE =
  `# Apply in the dep-ctrl workspace with apiexport.yaml. The export's maximalPermissionPolicy bounds what anyone\n` +
  `# (kcp-admin too; only system:masters is exempt) may do to DependencyRules in a workspace that binds it by what\n` +
  `# this ClusterRole grants the group ${MAXIMAL_PERMISSION_PREFIX}system:authenticated: everything on the rules,\n` +
  `# nothing on dependencyrules/status. So a provider cannot write its rules' status; only the controller does,\n` +
  `# through the export's virtual workspace. Without this file binders could do nothing with DependencyRules.\n`;

const WORKSPACE_TYPE_NOTE =
  `# Apply in root (or the workspace your platform keeps its types in), replacing ${DEFAULT_DEP_CTRL_PATH} with the\n` +
  `# dep-ctrl workspace path. Workspaces of this type (and of types that extend it) become providers on creation: the\n` +
  `# controller, run with --provider-workspace-type=<that workspace>:${PROVIDER_WORKSPACE_TYPE}, accepts the binding's\n` +
  `# claims and writes the index consent before the workspace is Ready (deploy/rbac/provider-initializer.yaml).\n`;

/** The files under deploy/kcp/, keyed by path relative to the repository root, exactly as written to disk. */
export function deployFiles(): Record<string, string> {
  const yaml = (m: Manifest): string => stringify(m, { lineWidth: 0 });
  return {
    "deploy/kcp/apiresourceschema.yaml": HEADER + yaml(apiResourceSchema()),
    "deploy/kcp/apiexport.yaml": HEADER + yaml(apiExport()),
    "deploy/kcp/maximal-permission-policy.yaml":
      HEADER + POLICY_NOTE + maximalPermissionsRbac().map(yaml).join("---\n"),
    "deploy/kcp/apibinding-provider.yaml": HEADER + BINDING_NOTE + yaml(providerApiBinding()),
    "deploy/kcp/workspacetype-provider.yaml": HEADER + WORKSPACE_TYPE_NOTE + yaml(providerWorkspaceType()),
  };
}
