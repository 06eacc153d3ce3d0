// DependencyRule, dependencies.opendefense.cloud/v1alpha1: the API providers write to declare that their resources
// depend on another provider's resources. Field names match the Go original so its manifests apply unchanged.

export const GROUP = "dependencies.opendefense.cloud";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "DependencyRule";
export const PLURAL = "dependencyrules";

/** Default name of the APIExport that serves DependencyRules from the dep-ctrl workspace. */
export const DEFAULT_EXPORT_NAME = GROUP;

/** Name of the ValidatingWebhookConfiguration installed in each dependency-provider workspace (same as the original). */
export const VWC_NAME = "dependency-controller";
/** Name of the single webhook inside that configuration; kcp prints it in every denial. */
export const WEBHOOK_NAME = "dependency-controller.dependencies.opendefense.cloud";
/** Label marking a VWC as written by this controller; it never touches a VWC without it. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "kcp-dependency-controller";

/** Break-glass: a protected object carrying this annotation with the exact value "true" may be deleted. */
export const SKIP_PROTECTION_ANNOTATION = "dependencies.opendefense.cloud/skip-protection";
/** kcp puts the logical cluster name of an object's workspace here, on every object it serves. */
export const CLUSTER_ANNOTATION = "kcp.io/cluster";

/**
 * Branded strings: a logical cluster name (`2x7k9…`) and a workspace path (`root:org:team`) are never interchangeable.
 * Only the checked constructors in wire.ts make them, so a value of either type has the right format.
 */
export type LogicalClusterName = string & { readonly __brand: "LogicalClusterName" };
export type WorkspacePath = string & { readonly __brand: "WorkspacePath" };

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  creationTimestamp?: string;
}

export interface DependentSpec {
  /** The APIExport (in the rule's own workspace) that serves the dependent resource. Informational, as in the original. */
  apiExportName: string;
  group: string;
  version: string;
  kind: string;
  /** Plural resource name; used to list dependents. */
  resource: string;
}

export interface DependencyTarget {
  apiExportRef: { path: string; name: string };
  group: string;
  version: string;
  resource: string;
  /** Where in a dependent the dependency's name is found, e.g. `.spec.vpcRef.name` or `.spec.nics[*].subnetRef.name`. */
  fieldRef: { path: string };
}

export interface DependencyRuleSpec {
  dependent: DependentSpec;
  dependencies: DependencyTarget[];
}

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: ConditionType;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export const CONDITION_TYPES = [
  "Ready",
  "ReferencesValid",
  "WorkspacesResolved",
  "WebhooksInstalled",
  "Acyclic",
  "DependentsIndexed",
  "LocalTargetsProtected",
] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export interface DependencyRuleStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface DependencyRule {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: DependencyRuleSpec;
  status?: DependencyRuleStatus;
}

/** Where a rule lives: rules are cluster-scoped, so (logical cluster, name) identifies one across all workspaces. */
export interface RuleKey {
  cluster: LogicalClusterName;
  name: string;
}

/** `<cluster>/<name>`: "/" cannot occur in a logical cluster name or an object name, so keys never collide. */
export function ruleKeyString(key: RuleKey): string {
  return `${key.cluster}/${key.name}`;
}

/** A group/resource pair; the empty group is the core group. */
export interface GroupResource {
  group: string;
  resource: string;
}

export interface GroupVersionResource extends GroupResource {
  version: string;
}

export function groupResourceString(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}
