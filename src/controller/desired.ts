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
import type { GroupVersionResource, ParsedRule } from "../api/rule.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { canonicalJson, compareStrings as cmp } from "../util/json.ts";

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
  return `${base.replace(/\/+$/, "")}/validate/${cluster}`;
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

/** A configuration as found in a workspace. */
export interface ExistingConfiguration {
  cluster: LogicalClusterName;
  object: ValidatingWebhookConfiguration;
}

export type Action =
  | { kind: "create"; cluster: LogicalClusterName; object: ValidatingWebhookConfiguration; reason: string }
  | { kind: "update"; cluster: LogicalClusterName; object: ValidatingWebhookConfiguration; reason: string }
  | { kind: "delete"; cluster: LogicalClusterName; name: string; uid?: string; reason: string };

export function isOurs(obj: { metadata?: ObjectMeta }): boolean {
  return obj.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}

const emptySelector = (s: ValidatingWebhook["namespaceSelector"]): boolean =>
  !s || ((s.matchLabels === undefined || Object.keys(s.matchLabels).length === 0) && !s.matchExpressions?.length);

/** Why `existing` differs from `desired` in anything we set; the API server's defaults count as equal. */
export function differences(
  existing: ValidatingWebhookConfiguration,
  desired: ValidatingWebhookConfiguration,
): string[] {
  const want = desired.webhooks?.[0];
  const have = existing.webhooks ?? [];
  const got = have[0];
  if (!want) return [];
  if (have.length !== 1 || !got || got.name !== want.name) return ["webhooks changed"];
  const reasons: string[] = [];
  // Compared as canonical JSON: kcp answers with its own key order, and that is no change.
  const normRules = (rules: WebhookRule[] | undefined): string =>
    canonicalJson((rules ?? []).map((r) => ({ ...r, scope: r.scope ?? "*" })));
  if (normRules(got.rules) !== normRules(want.rules)) reasons.push("rules changed");
  const paths = (c: ValidatingWebhookConfiguration): string =>
    c.metadata.annotations?.[WORKSPACE_PATHS_ANNOTATION] ?? "";
  if (paths(existing) !== paths(desired)) reasons.push("workspace paths changed");
  if (got.clientConfig?.url !== want.clientConfig.url || got.clientConfig?.service !== undefined)
    reasons.push("url changed");
  if ((got.clientConfig?.caBundle ?? "") !== (want.clientConfig.caBundle ?? "")) reasons.push("caBundle changed");
  // Anything else we set, or that would narrow what the webhook sees, is put back: the configuration is ours.
  const settings = (w: ValidatingWebhook): string =>
    canonicalJson([
      w.failurePolicy ?? "Fail",
      w.sideEffects,
      w.admissionReviewVersions,
      w.timeoutSeconds ?? 10,
      w.matchPolicy ?? "Equivalent",
      emptySelector(w.namespaceSelector),
      emptySelector(w.objectSelector),
      w.matchConditions?.length ?? 0,
    ]);
  if (settings(got) !== settings(want)) reasons.push("webhook settings changed");
  return reasons;
}

export interface PlanOptions {
  /**
   * Workspaces whose configuration must not be deleted this pass although no rule wants it: a path that named them
   * cannot be resolved right now for a transient reason. Every other workspace is pruned as usual.
   */
  keep: ReadonlySet<LogicalClusterName>;
}

/**
 * The workspaces to keep while `transientPaths` cannot be resolved: those whose configuration lists one of them in
 * its paths annotation. A configuration without the annotation (written by an older version) could serve any path,
 * so it is kept too while any path is in doubt.
 */
export function keptWorkspaces(
  existing: readonly ExistingConfiguration[],
  transientPaths: readonly string[],
): Set<LogicalClusterName> {
  const keep = new Set<LogicalClusterName>();
  if (transientPaths.length === 0) return keep;
  for (const e of existing) {
    const listed = e.object.metadata.annotations?.[WORKSPACE_PATHS_ANNOTATION];
    if (listed === undefined || listed.split(",").some((p) => transientPaths.includes(p))) keep.add(e.cluster);
  }
  return keep;
}

/**
 * The writes that turn `existing` into `desired`: create what is missing, update what differs, delete configurations
 * of ours that no rule wants. Configurations without our label are never in the plan.
 */
export function planActions(
  desired: ReadonlyMap<LogicalClusterName, ValidatingWebhookConfiguration>,
  existing: readonly ExistingConfiguration[],
  opts: PlanOptions,
): Action[] {
  const ours = existing.filter((e) => isOurs(e.object));
  const actions: Action[] = [];
  for (const [cluster, want] of desired) {
    const have = ours.find((e) => e.cluster === cluster && e.object.metadata.name === want.metadata.name);
    if (!have) {
      actions.push({ kind: "create", cluster, object: want, reason: "a rule protects resources in this workspace" });
      continue;
    }
    const reasons = differences(have.object, want);
    if (reasons.length === 0) continue;
    const meta = have.object.metadata;
    actions.push({
      kind: "update",
      cluster,
      // Keep others' labels and annotations and the resourceVersion (optimistic concurrency); replace the webhooks.
      object: {
        ...want,
        metadata: {
          ...meta,
          labels: { ...meta.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
          annotations: { ...meta.annotations, ...want.metadata.annotations },
        },
      },
      reason: reasons.join(", "),
    });
  }
  for (const e of ours) {
    const want = desired.get(e.cluster);
    if (want && want.metadata.name === e.object.metadata.name) continue;
    if (!want && opts.keep.has(e.cluster)) continue;
    actions.push({
      kind: "delete",
      cluster: e.cluster,
      name: e.object.metadata.name,
      ...(e.object.metadata.uid ? { uid: e.object.metadata.uid } : {}),
      reason: want ? `unexpected name (ours is ${VWC_NAME})` : "no rule protects resources in this workspace",
    });
  }
  const order = (a: Action): string => `${a.cluster}/${a.kind === "delete" ? a.name : a.object.metadata.name}`;
  return actions.sort((a, b) => cmp(order(a), order(b)));
}
