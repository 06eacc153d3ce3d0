// Local targets (a Secret or ConfigMap of the consumer workspace that a dependent names): kcp v0.30.0 consults, for a
// workspace's own types, only the ValidatingWebhookConfigurations in that workspace, so each consumer workspace of the
// dependent's APIExport gets one configuration, written through that export's virtual workspace with two consents:
// the consumer accepted the export's `validatingwebhookconfigurations` claim in its APIBinding, and the provider
// granted the controller the export's content (deploy/rbac/provider-local-targets.yaml). Pure: what to install where,
// the writes (planActions, the one diff of configurations), and what the rule's status says of the coverage.
import { createHash } from "node:crypto";
import type { GroupVersionResource, ParsedRule } from "../api/rule.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  ruleKeyString,
  VWC_NAME,
  type LogicalClusterName,
  type ObjectMeta,
} from "../api/types.ts";
import { compareStrings as cmp } from "../util/json.ts";
import { planActions, type Action, type ExistingConfiguration } from "./actions.ts";
import { buildConfiguration, type ValidatingWebhookConfiguration } from "./desired.ts";
import { overCapMessage } from "../api/rule-cap.ts";
import type { Verdict } from "./index-status.ts";
import { blindNote, type ShardsToVisit } from "./local-targets-shards.ts";

/** Marks a configuration in a consumer workspace as one export's local-target configuration (value: its id). */
export const LOCAL_TARGETS_LABEL = "dependencies.opendefense.cloud/local-targets";
/** On it: `<provider logical cluster>/<export name>`, for whoever looks at the consumer workspace. */
export const LOCAL_TARGETS_EXPORT_ANNOTATION = "dependencies.opendefense.cloud/export";
export const VWC_CLAIM = { group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations" };

/** The dependent's APIExport, whose consumers get the configuration and through whose virtual workspace it goes. */
export interface DependentExport {
  cluster: LogicalClusterName;
  exportName: string;
}

/** All local targets of the rules whose dependent one export serves. */
export interface LocalTargetSet {
  export: DependentExport;
  targets: GroupVersionResource[];
  /** ruleKeyString of each rule contributing. */
  rules: string[];
}

/** `<cluster>/<export>`: neither contains a "/". */
export const exportKey = (e: DependentExport): string => `${e.cluster}/${e.exportName}`;

/** A short stable id per export: configuration names and label values have length limits an export name may pass. */
export function exportId(e: DependentExport): string {
  return createHash("sha256").update(exportKey(e)).digest("hex").slice(0, 16);
}

/** `dependency-controller-local-<id>`: the VWC name family, one per dependent export in each consumer workspace. */
export function localConfigurationName(e: DependentExport): string {
  return `${VWC_NAME}-local-${exportId(e)}`;
}

/** The rules' local targets grouped by their dependent's export; rules left out by `skip` contribute nothing. */
export function localTargetSets(rules: readonly ParsedRule[], skip?: (rule: ParsedRule) => boolean): LocalTargetSet[] {
  const sets = new Map<string, LocalTargetSet>();
  for (const rule of rules) {
    if (!rule.dependent || rule.localDependencies.length === 0 || skip?.(rule)) continue;
    const exp = { cluster: rule.key.cluster, exportName: rule.dependent.apiExportName };
    const set = sets.get(exportKey(exp)) ?? { export: exp, targets: [], rules: [] };
    set.targets.push(...rule.localDependencies.map((d) => d.target));
    set.rules.push(ruleKeyString(rule.key));
    sets.set(exportKey(exp), set);
  }
  return [...sets.values()].sort((a, b) => cmp(exportKey(a.export), exportKey(b.export)));
}

/**
 * The configuration for one export's consumers: DELETE of the named core types only, sent to
 * `/validate/<provider cluster>`, where the webhook finds the rules of the provider's workspace (contribution.ts).
 */
export function localConfiguration(
  set: LocalTargetSet,
  webhookBaseUrl: string,
  caBundle?: string,
): ValidatingWebhookConfiguration {
  const base = buildConfiguration(set.export.cluster, set.targets, webhookBaseUrl, caBundle);
  const meta: ObjectMeta = {
    name: localConfigurationName(set.export),
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [LOCAL_TARGETS_LABEL]: exportId(set.export) },
    annotations: { [LOCAL_TARGETS_EXPORT_ANNOTATION]: exportKey(set.export) },
  };
  // Secrets and ConfigMaps are namespaced: a cluster-scoped rule would only widen what kcp sends.
  const webhooks = base.webhooks?.map((w) => ({ ...w, rules: w.rules?.map((r) => ({ ...r, scope: "Namespaced" })) }));
  return { ...base, metadata: meta, ...(webhooks ? { webhooks } : {}) };
}

/** One APIBinding of the export as its virtual workspace lists it (the parts read here). */
export interface ExportBinding {
  metadata: { annotations?: Record<string, string> };
  spec?: { permissionClaims?: { group?: string; resource?: string; state?: string }[] };
}

/** Whether the consumer accepted the export's claim on ValidatingWebhookConfigurations. */
export function acceptedWebhookClaim(b: ExportBinding): boolean {
  return (b.spec?.permissionClaims ?? []).some(
    (c) => (c.group ?? "") === VWC_CLAIM.group && c.resource === VWC_CLAIM.resource && c.state === "Accepted",
  );
}

/** What the export's virtual workspace showed: its bindings (by consumer cluster) and our configurations there. */
export interface ExportView {
  /** consumer logical cluster → whether it accepted the claim. */
  consumers: ReadonlyMap<LogicalClusterName, boolean>;
  /** Configurations carrying this export's LOCAL_TARGETS_LABEL, in the consumers that accepted. */
  existing: readonly ExistingConfiguration[];
  /** Whether the export claims ValidatingWebhookConfigurations at all (a binding can only accept what it claims). */
  claimed: boolean;
  /** Why consumers on shards where no provider binds the dep-ctrl export may be missing (local-targets-shards.ts). */
  blind?: ShardsToVisit["blind"];
}

/** The writes for one export: its configuration in each consumer that accepted, pruned where no rule asks any more. */
export function planLocalWrites(want: ValidatingWebhookConfiguration | undefined, view: ExportView): Action[] {
  const desired = new Map<LogicalClusterName, ValidatingWebhookConfiguration>();
  if (want) for (const [cluster, accepted] of view.consumers) if (accepted) desired.set(cluster, want);
  return planActions(desired, view.existing, { keep: new Set() });
}

/**
 * Whether an export's virtual workspace refused a read because the export or the provider's grant is not there: 403 or
 * 404, or the 500 kcp v0.30.0 answers once the export is deleted ("API export not found", measured by
 * bench/lt-kcp.ts). Not a failure that passes by itself; any other 500 may.
 */
export function exportGone(status: number, message: string): boolean {
  return status === 403 || status === 404 || (status === 500 && /API export not found/.test(message));
}

/** What a rule's status says of its local targets (one export's answer, shared by its rules). */
export type LocalCoverage =
  /** `gone`: the export or the provider's grant is not there (exportGone). */
  | { kind: "unreadable"; forbidden: boolean; message: string; gone?: boolean }
  | {
      kind: "read";
      claimed: boolean;
      resources: string[];
      consumers: number;
      covered: number;
      declined: LogicalClusterName[];
      failed: number;
      blind?: ShardsToVisit["blind"];
    };

/** The coverage after the writes: a consumer counts as covered when it accepted and no write there failed. */
export function coverageOf(
  set: LocalTargetSet,
  view: ExportView,
  failed: ReadonlySet<LogicalClusterName>,
): LocalCoverage {
  const declined = [...view.consumers].filter(([, ok]) => !ok).map(([c]) => c);
  const accepted = [...view.consumers].filter(([c, ok]) => ok && !failed.has(c)).length;
  return {
    kind: "read",
    claimed: view.claimed,
    resources: [...new Set(set.targets.map((t) => t.resource))].sort(cmp),
    consumers: view.consumers.size,
    covered: accepted,
    declined: declined.sort(cmp),
    failed: failed.size,
    ...(view.blind ? { blind: view.blind } : {}),
  };
}

const GRANT_HINT = "deploy/rbac/provider-local-targets.yaml";
const MAX_NAMED = 5;

/** The LocalTargetsProtected condition of a rule with local targets, from its export's coverage. */
export function localTargetsVerdict(exportName: string, coverage: LocalCoverage | undefined): Verdict {
  if (!coverage)
    return {
      status: "Unknown",
      reason: "NotChecked",
      message: "local targets not looked at yet (the rule is not enforced)",
    };
  if (coverage.kind === "unreadable")
    return coverage.forbidden
      ? {
          status: "False",
          reason: "GrantMissing",
          message:
            `the controller may not use APIExport ${exportName}'s virtual workspace, so it protects local targets in ` +
            `no consumer workspace: apply ${GRANT_HINT} in this workspace`,
        }
      : {
          status: "Unknown",
          reason: "ReadFailed",
          message: `could not read ${exportName}'s bindings: ${coverage.message}`,
        };
  const what = coverage.resources.join(" and ");
  if (!coverage.claimed && coverage.consumers > 0)
    return {
      status: "False",
      reason: "NotClaimed",
      message:
        `APIExport ${exportName} does not claim validatingwebhookconfigurations (admissionregistration.k8s.io), so no ` +
        `consumer workspace can consent: protecting ${what} in 0 of ${coverage.consumers} consumer workspaces` +
        blindNote(coverage.blind),
    };
  const count = `protecting ${what} in ${coverage.covered} of ${coverage.consumers} consumer workspaces`;
  const named = coverage.declined.slice(0, MAX_NAMED).join(", ") + (coverage.declined.length > MAX_NAMED ? ", …" : "");
  // What is not protected besides: who declined, and which shards may not be seen at all.
  const unprotected =
    (coverage.declined.length > 0
      ? `; ${coverage.declined.length} did not accept the validatingwebhookconfigurations claim of ${exportName} ` +
        `and are unprotected (${named})`
      : "") + blindNote(coverage.blind);
  if (coverage.failed > 0)
    return {
      status: "False",
      reason: "InstallFailed",
      message: `${count}${unprotected}; writing the configuration failed in ${coverage.failed}`,
    };
  return {
    status: "True",
    reason: coverage.declined.length > 0 ? "SomeDeclined" : "Protected",
    message: `${count}${unprotected}`,
  };
}

/**
 * LocalTargetsProtected. A rule the controller does not enforce (over the workspace's cap, or its dependent export
 * definitely gone, e.g. deleted) protects local targets nowhere, and its export's consumers are not looked at
 * (installedNowhere in plan.ts): say why, rather than "not looked at yet", which would never change. Otherwise its
 * export's coverage.
 */
export function localTargetsProtected(
  exportName: string,
  facts: { overCap?: number; references?: { dependentInvalid: boolean; problems: string[] }; local?: LocalCoverage },
): Verdict {
  const nowhere = "so local targets are protected in no consumer workspace";
  if (facts.overCap !== undefined)
    return { status: "False", reason: "RuleCapExceeded", message: `${overCapMessage(facts.overCap)}; ${nowhere}` };
  if (facts.references?.dependentInvalid)
    return {
      status: "False",
      reason: "DependentInvalid",
      message: `APIExport ${exportName} does not serve the dependent (${facts.references.problems.join("; ")}); ${nowhere}`,
    };
  return localTargetsVerdict(exportName, facts.local);
}
