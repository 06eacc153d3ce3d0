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
import type { Resolution } from "../kcp/workspaces.ts";
import type { GroupVersionResource, ParsedRule } from "./rules.ts";

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

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

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
): ValidatingWebhookConfiguration {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: VWC_NAME, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
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
  const contributions = new Map<string, Set<LogicalClusterName>>();
  for (const rule of input.rules) {
    const clusters = new Set<LogicalClusterName>();
    for (const dep of rule.dependencies) {
      const res = input.resolutions.get(dep.path);
      if (!res?.ok) continue;
      clusters.add(res.cluster);
      const list = targets.get(res.cluster) ?? [];
      list.push(dep.target);
      targets.set(res.cluster, list);
    }
    contributions.set(ruleKeyString(rule.key), clusters);
  }
  const configurations = new Map<LogicalClusterName, ValidatingWebhookConfiguration>();
  for (const cluster of [...targets.keys()].sort()) {
    configurations.set(
      cluster,
      buildConfiguration(cluster, targets.get(cluster) ?? [], input.webhookBaseUrl, input.caBundle),
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
  const normRules = (rules: WebhookRule[] | undefined): string =>
    JSON.stringify((rules ?? []).map((r) => ({ ...r, scope: r.scope ?? "*" })));
  if (normRules(got.rules) !== normRules(want.rules)) reasons.push("rules changed");
  if (got.clientConfig?.url !== want.clientConfig.url || got.clientConfig?.service !== undefined)
    reasons.push("url changed");
  if ((got.clientConfig?.caBundle ?? "") !== (want.clientConfig.caBundle ?? "")) reasons.push("caBundle changed");
  // Anything else we set, or that would narrow what the webhook sees, is put back: the configuration is ours.
  const settings = (w: ValidatingWebhook): string =>
    JSON.stringify([
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
   * False when some rule's workspace could not be resolved for a transient reason: that workspace's configuration
   * is then missing from `desired` but must not be deleted, so this pass deletes nothing.
   */
  allowDeletes: boolean;
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
        metadata: { ...meta, labels: { ...meta.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
      },
      reason: reasons.join(", "),
    });
  }
  if (opts.allowDeletes) {
    for (const e of ours) {
      const want = desired.get(e.cluster);
      if (want && want.metadata.name === e.object.metadata.name) continue;
      actions.push({
        kind: "delete",
        cluster: e.cluster,
        name: e.object.metadata.name,
        ...(e.object.metadata.uid ? { uid: e.object.metadata.uid } : {}),
        reason: want ? `unexpected name (ours is ${VWC_NAME})` : "no rule protects resources in this workspace",
      });
    }
  }
  const order = (a: Action): string => `${a.cluster}/${a.kind === "delete" ? a.name : a.object.metadata.name}`;
  return actions.sort((a, b) => cmp(order(a), order(b)));
}
