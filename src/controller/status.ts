// A rule's status, computed from what the last pass found. Pure and deterministic: messages are sorted and carry no
// timestamps, and lastTransitionTime only moves when a condition's status does, so an unchanged rule is not rewritten.
import {
  type Condition,
  type ConditionType,
  type DependencyRuleStatus,
  type LogicalClusterName,
} from "../api/types.ts";
import type { IndexedTypeState } from "../api/index-report.ts";
import { unresolvedWorkspace, type ReferencesVerdict } from "../api/references.ts";
import type { ParsedRule } from "../api/rule.ts";
import { overCapMessage } from "../api/rule-cap.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { canonicalJson, compareStrings as cmp } from "../util/json.ts";
import { localTargetsProtected, type LocalCoverage } from "./local-targets.ts";
import { dependentsIndexed, REVOCATION_GRACE_MS, type Verdict } from "./index-status.ts";

export { REVOCATION_GRACE_MS } from "./index-status.ts";

export type InstallResult = { ok: true } | { ok: false; error: string };

export interface RuleFacts {
  /** Resolution of each `apiExportRef.path` (valid dependencies only). */
  resolutions: ReadonlyMap<string, Resolution>;
  /** For each provider cluster the rule contributes to: is the webhook configuration there as desired? */
  installs: ReadonlyMap<LogicalClusterName, InstallResult>;
  /** The cycle message, when one of the rule's edges is on a dependency cycle. */
  cycle?: string;
  /** The references checked against kcp; undefined when not checked (invalid spec). */
  references?: ReferencesVerdict;
  /** The webhook's index of this rule's dependent type; undefined when the webhook reports none (live mode). */
  index?: IndexedTypeState | { state: "missing" };
  /** How long a revoked index consent fails closed (REVOCATION_GRACE_MS unless set). */
  revocationGraceMs?: number;
  /** Every webhook replica enforces rules whose author declined the checks (--enforce-unverified-rules). */
  enforcesUnverified?: boolean;
  /** Set (to the cap) when the rule is past its author's cap (src/api/rule-cap.ts): installed nowhere. */
  overCap?: number;
  /** How far its local targets are protected (local-targets.ts); undefined when not looked at. */
  local?: LocalCoverage;
}

export interface RuleStatus extends DependencyRuleStatus {
  dependencyCount: number;
}

const MAX_MESSAGE = 4000;

function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}

function paths(rule: ParsedRule, facts?: RuleFacts): string[] {
  const excluded = facts?.references?.invalidDependencies;
  const deps = rule.dependencies.filter((d) => !excluded?.has(d.index));
  return [...new Set(deps.map((d) => d.path as string))].sort(cmp);
}

const UNRESOLVED_HINT =
  "not enforced until it resolves: check the path, and that the controller and webhook may read the workspaces " +
  "along it: deploy/rbac/workspace-resolution.yaml";

/** A rule whose dependencies are all local targets has no provider workspace: LocalTargetsProtected says the rest. */
const ONLY_LOCAL: Verdict = {
  status: "True",
  reason: "OnlyLocalTargets",
  message: "every dependency is a local target of the consumer workspaces (see LocalTargetsProtected)",
};

function workspacesResolved(rule: ParsedRule, facts: RuleFacts): Verdict {
  const all = paths(rule);
  if (all.length === 0 && rule.localDependencies.length > 0) return ONLY_LOCAL;
  if (all.length === 0)
    return { status: "Unknown", reason: "NoValidDependencies", message: "no valid dependency to resolve" };
  const failed: string[] = [];
  const resolved: string[] = [];
  for (const p of all) {
    const r = facts.resolutions.get(p);
    // A path read again in vain keeps its last logical cluster (and protects there), but it is not resolved now.
    // Why a path did not resolve is the controller's log's to say (unresolvedWorkspace: a 404 and a 403 read alike).
    if (r?.ok && r.stale)
      failed.push(`${p}: ${unresolvedWorkspace(p)} now; still protecting in its last logical cluster ${r.cluster}`);
    else if (r?.ok) resolved.push(`${p} (${r.cluster})`);
    // The webhook does not enforce a dependency whose path does not resolve: say so, and what to check.
    else failed.push(`${p}: ${r ? unresolvedWorkspace(p) : "not resolved yet"}; ${UNRESOLVED_HINT}`);
  }
  if (failed.length > 0) return { status: "False", reason: "ResolutionFailed", message: failed.join("; ") };
  return { status: "True", reason: "Resolved", message: `resolved ${resolved.join(", ")}` };
}

function webhooksInstalled(rule: ParsedRule, facts: RuleFacts): Verdict {
  if (facts.overCap !== undefined)
    return { status: "False", reason: "RuleCapExceeded", message: overCapMessage(facts.overCap) };
  if (facts.references?.dependentInvalid)
    return { status: "False", reason: "NotEnforced", message: "not installed: the dependent is not valid" };
  // Name workspaces by path (what the user wrote), in the order of the sorted paths.
  const byCluster = new Map<LogicalClusterName, string[]>();
  for (const p of paths(rule, facts)) {
    const r = facts.resolutions.get(p);
    if (r?.ok) byCluster.set(r.cluster, [...(byCluster.get(r.cluster) ?? []), p]);
  }
  if (byCluster.size === 0 && rule.dependencies.length === 0 && rule.localDependencies.length > 0) return ONLY_LOCAL;
  if (byCluster.size === 0) {
    return rule.dependencies.length === 0
      ? { status: "Unknown", reason: "NoValidDependencies", message: "no valid dependency to protect" }
      : { status: "False", reason: "NoWorkspaceResolved", message: "no dependency workspace could be resolved" };
  }
  const failed: string[] = [];
  const installed: string[] = [];
  for (const [cluster, ps] of [...byCluster].sort(([a], [b]) => cmp(a, b))) {
    const result = facts.installs.get(cluster);
    const name = ps.join(", ");
    if (result?.ok) installed.push(name);
    else failed.push(`${name}: ${result ? result.error : "not installed yet"}`);
  }
  if (failed.length > 0) return { status: "False", reason: "InstallFailed", message: failed.sort(cmp).join("; ") };
  return { status: "True", reason: "Installed", message: `webhook installed in ${installed.sort(cmp).join(", ")}` };
}

function referencesValid(rule: ParsedRule, facts: RuleFacts): Verdict {
  const v = facts.references;
  if (!rule.dependent) return { status: "Unknown", reason: "InvalidSpec", message: "spec.dependent is invalid" };
  if (!v) return { status: "Unknown", reason: "NotChecked", message: "references not checked yet" };
  const message = v.problems.join("; ");
  if (v.dependentInvalid) return { status: "False", reason: "DependentInvalid", message };
  if (v.declined && facts.enforcesUnverified)
    return {
      status: "Unknown",
      reason: "ChecksDeclined",
      message:
        `not checked: this workspace declined the read-only claims (${message}); the webhook enforces the rule ` +
        "anyway (--enforce-unverified-rules); accept the claims in its APIBinding to the dep-ctrl export " +
        "(deploy/kcp/apibinding-provider.yaml) to have it checked",
    };
  if (v.declined)
    return {
      status: "False",
      reason: "ChecksDeclined",
      message:
        `not enforced: this workspace declined the read-only claims, so the rule could not be checked (${message}); ` +
        "accept them in its APIBinding to the dep-ctrl export (deploy/kcp/apibinding-provider.yaml)",
    };
  if (v.invalidDependencies.size > 0) return { status: "False", reason: "DependencyInvalid", message };
  if (v.unknown) return { status: "Unknown", reason: "CannotVerify", message };
  return {
    status: "True",
    reason: "Valid",
    message: "the dependent and every dependency are served by the APIExports the rule names",
  };
}

function acyclic(rule: ParsedRule, facts: RuleFacts): Verdict {
  if (facts.cycle) return { status: "False", reason: "CycleDetected", message: facts.cycle };
  if (!rule.dependent) return { status: "Unknown", reason: "InvalidSpec", message: "spec.dependent is invalid" };
  return { status: "True", reason: "NoCycle", message: "no dependency cycle through this rule" };
}

function ready(rule: ParsedRule, others: [ConditionType, Verdict][]): Verdict {
  if (rule.problems.length > 0)
    return { status: "False", reason: "InvalidSpec", message: `invalid rule: ${rule.problems.join("; ")}` };
  // Ready means the rule refuses what it should now. An index listing again (IndexResyncing) fails closed meanwhile,
  // so it is; a first listing (IndexSyncing) or no report yet (NotReported) enforces nothing yet, so it is not.
  // References that could not be checked (Unknown: a provider declined the checks, or the author did and the webhook
  // enforces unchecked rules) are enforced as written, so they do not hold Ready back; Ready's message names them.
  const unchecked = others.filter(([t, v]) => t === "ReferencesValid" && v.status === "Unknown" && rule.dependent);
  const failing = others.filter(
    ([t, v]) =>
      v.status !== "True" &&
      !(t === "DependentsIndexed" && v.reason === "IndexResyncing") &&
      !unchecked.some(([u]) => u === t),
  );
  if (failing.length === 0)
    return {
      status: "True",
      reason: "Ready",
      message: `deletion protection is installed${unchecked.map(([, v]) => ` (references unchecked: ${v.message})`).join("")}`,
    };
  return {
    status: "False",
    reason: failing[0]![1].reason,
    message: failing.map(([type, v]) => `${type}: ${v.message}`).join("; "),
  };
}

/**
 * The status the rule should have. `previous` is what the controller concluded last (its stored verdict, never the
 * status on the rule, which its author may have written); a condition keeps its lastTransitionTime while its status
 * value stays the same.
 */
export function computeStatus(
  rule: ParsedRule,
  facts: RuleFacts,
  previous: DependencyRuleStatus | undefined,
  now: string,
): RuleStatus {
  // Times from outside this pass are never trusted to lie ahead of it (a clock that stepped back, or a stored time
  // written by a replica whose clock ran fast): a transition can not have happened after now.
  const nowMs = Date.parse(now);
  const before = (type: ConditionType): Condition | undefined => {
    const c = previous?.conditions?.find((x) => x.type === type);
    return c && !(Date.parse(c.lastTransitionTime) <= nowMs) ? { ...c, lastTransitionTime: now } : c;
  };
  const clock = { now, graceMs: facts.revocationGraceMs ?? REVOCATION_GRACE_MS };
  const others: [ConditionType, Verdict][] = [
    ["ReferencesValid", referencesValid(rule, facts)],
    ["WorkspacesResolved", workspacesResolved(rule, facts)],
    ["WebhooksInstalled", webhooksInstalled(rule, facts)],
    ["Acyclic", acyclic(rule, facts)],
    ...(rule.localDependencies.length > 0
      ? [
          ["LocalTargetsProtected", localTargetsProtected(rule.dependent!.apiExportName, facts)] as [
            ConditionType,
            Verdict,
          ],
        ]
      : []),
    ...(facts.index
      ? [
          ["DependentsIndexed", dependentsIndexed(rule, facts.index, before("DependentsIndexed"), clock)] as [
            ConditionType,
            Verdict,
          ],
        ]
      : []),
  ];
  const verdicts: [ConditionType, Verdict][] = [["Ready", ready(rule, others)], ...others];
  const conditions = verdicts.map(([type, v]): Condition => {
    const was = before(type);
    return {
      type,
      status: v.status,
      reason: v.reason,
      message: clip(v.message),
      ...(rule.generation !== undefined ? { observedGeneration: rule.generation } : {}),
      lastTransitionTime: was && was.status === v.status && was.lastTransitionTime ? was.lastTransitionTime : now,
    };
  });
  return {
    ...(rule.generation !== undefined ? { observedGeneration: rule.generation } : {}),
    dependencyCount: rule.dependencyCount,
    conditions,
  };
}

/** Whether writing `next` would change anything (key order and absent-vs-undefined do not count). */
export function statusChanged(current: unknown, next: RuleStatus): boolean {
  return canonicalJson(current ?? {}) !== canonicalJson(next);
}
