// The desired ValidatingWebhookConfigurations, recomputed from all rules on every pass, and the writes that make the
// provider workspaces match them. Pure: no I/O, no clock, deterministic output for the same input.
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  type LogicalClusterName,
  type ObjectMeta,
  ruleKeyString,
  VWC_NAME,
  WEBHOOK_NAME,
} from "../api/types.ts";
import { validateRouteOf } from "../api/wire.ts";
import type { GroupVersionResource, ParsedRule } from "../api/rule.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { compareStrings as cmp } from "../util/json.ts";

export const WEBHOOK_TIMEOUT_SECONDS = 10;

export interface WebhookRule {
  operations: string[];
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
  scope?: string;
}

export interface ValidatingWebhook {
  name: string;
  clientConfig: { url?: string; caBundle?: string; service?: unknown };
  rules?: WebhookRule[];
  failurePolicy?: string;
  sideEffects?: string;
  admissionReviewVersions?: string[];
  timeoutSeconds?: number;
  matchPolicy?: string;
  namespaceSelector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  objectSelector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  matchConditions?: unknown[];
}

export interface ValidatingWebhookConfiguration {
  apiVersion: "admissionregistration.k8s.io/v1";
  kind: "ValidatingWebhookConfiguration";
  metadata: ObjectMeta;
  webhooks?: ValidatingWebhook[];
}

export interface DesiredInput {
  rules: readonly ParsedRule[];
  /** Resolution of every `apiExportRef.path` the rules name; a path missing here counts as unresolved. */
  resolutions: ReadonlyMap<string, Resolution>;
  /** e.g. https://webhook.example:9443; each workspace's webhook gets `<base>/validate/<cluster>`. */
  webhookBaseUrl: string;
  /** base64 of the PEM bundle; omitted means kcp's system trust roots. */
  caBundle?: string;
  /** Dependencies not to install, e.g. whose rule's dependent or whose own export definitely fails its check. */
  excluded?: (rule: ParsedRule, dep: ParsedRule["dependencies"][number]) => boolean;
}

export interface DesiredState {
  /** One configuration per dependency-provider logical cluster. */
  configurations: Map<LogicalClusterName, ValidatingWebhookConfiguration>;
  /** ruleKeyString → the provider clusters this rule contributes a webhook rule to. */
  contributions: Map<string, Set<LogicalClusterName>>;
}

export function webhookUrl(base: string, cluster: LogicalClusterName): string {
  return `${base.replace(/\/+$/, "")}${validateRouteOf(cluster)}`;
}

/**
 * On each configuration: the workspace paths (comma-separated, sorted) that resolved to its workspace. After a
 * restart, while a path cannot be resolved for a transient reason, this tells which configuration must be kept.
 */
export const WORKSPACE_PATHS_ANNOTATION = "dependencies.opendefense.cloud/workspace-paths";

function compareGvr(a: GroupVersionResource, b: GroupVersionResource): number {
  return cmp(a.group, b.group) || cmp(a.version, b.version) || cmp(a.resource, b.resource);
}

/** One DELETE rule per group/version/resource, sorted, so the same targets always give the same object. */
export function webhookRules(targets: Iterable<GroupVersionResource>): WebhookRule[] {
  const unique = new Map<string, GroupVersionResource>();
  for (const t of targets) unique.set(`${t.group}/${t.version}/${t.resource}`, t);
  return [...unique.values()].sort(compareGvr).map((t) => ({
    operations: ["DELETE"],
    apiGroups: [t.group],
    apiVersions: [t.version],
    resources: [t.resource],
    scope: "*",
  }));
}

export function buildConfiguration(
  cluster: LogicalClusterName,
  targets: Iterable<GroupVersionResource>,
  webhookBaseUrl: string,
  caBundle?: string,
  paths: readonly string[] = [],
): ValidatingWebhookConfiguration {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: {
      name: VWC_NAME,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations: { [WORKSPACE_PATHS_ANNOTATION]: [...new Set(paths)].sort(cmp).join(",") },
    },
    webhooks: [
      {
        name: WEBHOOK_NAME,
        clientConfig: { url: webhookUrl(webhookBaseUrl, cluster), ...(caBundle ? { caBundle } : {}) },
        rules: webhookRules(targets),
        failurePolicy: "Fail",
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
        matchPolicy: "Equivalent",
      },
    ],
  };
}

/** The union, per provider cluster, of what all rules protect there. Unresolved paths contribute nothing. */
export function desiredConfigurations(input: DesiredInput): DesiredState {
  const targets = new Map<LogicalClusterName, GroupVersionResource[]>();
  const pathsOf = new Map<LogicalClusterName, string[]>();
  const contributions = new Map<string, Set<LogicalClusterName>>();
  for (const rule of input.rules) {
    const clusters = new Set<LogicalClusterName>();
    for (const dep of rule.dependencies) {
      const res = input.resolutions.get(dep.path);
      if (!res?.ok || input.excluded?.(rule, dep)) continue;
      clusters.add(res.cluster);
      targets.set(res.cluster, [...(targets.get(res.cluster) ?? []), dep.target]);
      pathsOf.set(res.cluster, [...(pathsOf.get(res.cluster) ?? []), dep.path]);
    }
    contributions.set(ruleKeyString(rule.key), clusters);
  }
  const configurations = new Map<LogicalClusterName, ValidatingWebhookConfiguration>();
  for (const cluster of [...targets.keys()].sort()) {
    configurations.set(
      cluster,
      buildConfiguration(
        cluster,
        targets.get(cluster) ?? [],
        input.webhookBaseUrl,
        input.caBundle,
        pathsOf.get(cluster) ?? [],
      ),
    );
  }
  return { configurations, contributions };
}
