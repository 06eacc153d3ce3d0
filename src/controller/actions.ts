// The writes that turn the webhook configurations found in provider workspaces into the desired ones: create what
// is missing, update what differs (kcp's defaults and key order are no difference), prune what no rule wants, never
// touch a configuration without our label. Pure.
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  VWC_NAME,
  type LogicalClusterName,
  type ObjectMeta,
} from "../api/types.ts";
import { canonicalJson, compareStrings as cmp } from "../util/json.ts";
import {
  WORKSPACE_PATHS_ANNOTATION,
  type ValidatingWebhook,
  type ValidatingWebhookConfiguration,
  type WebhookRule,
} from "./desired.ts";

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

/** A configuration's identity: logical cluster names and object names contain no "/". */
const configurationKey = (cluster: LogicalClusterName, name: string): string => `${cluster}/${name}`;

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
  // Indexed once by workspace and name: a scan per desired workspace made a pass quadratic in the workspaces (406,350
  // comparisons for 900 consumers of one export). The first configuration of a name wins, as the scan's did.
  const byName = new Map<string, ExistingConfiguration>();
  for (const e of ours) {
    const key = configurationKey(e.cluster, e.object.metadata.name);
    if (!byName.has(key)) byName.set(key, e);
  }
  const actions: Action[] = [];
  for (const [cluster, want] of desired) {
    const have = byName.get(configurationKey(cluster, want.metadata.name));
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
