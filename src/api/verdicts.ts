// What the controller concluded about each rule, kept where only dep-ctrl's own identities write: ConfigMaps in the
// dep-ctrl workspace. A rule's `status` is output only: its author is admin of its own workspace and can write it
// (where the operator has not applied the export's maximal permission policy), so nothing is ever decided from it.
// The webhook decides from these verdicts instead, and the controller computes each next status from them, so a
// verdict (a revocation's start, "this rule protected", "its dependent is invalid") survives restarts of either
// binary without trusting a byte a tenant wrote.
//
// Also kept: the last good logical cluster of every provider path a rule names, so a webhook replica that restarts
// while workspace reads fail keeps protecting what it protected (docs/architecture.md, "Blast radius").
//
// How they are stored (ConfigMaps by hash bucket, sized for 10,000 rules): verdict-configmaps.ts.
import {
  CONDITION_TYPES,
  type Condition,
  type ConditionStatus,
  type ConditionType,
  type DependencyRuleStatus,
  type LogicalClusterName,
} from "./types.ts";

/** One condition as the controller last wrote it: enough to keep its transition time and to decide from. */
export interface RememberedCondition {
  status: ConditionStatus;
  reason: string;
  /** lastTransitionTime, stamped by the controller's clock. */
  since: string;
}

/** The controller's last verdict on one rule object (by uid: a rule deleted and created again starts afresh). */
export interface RuleVerdict {
  uid?: string;
  generation?: number;
  conditions: Partial<Record<ConditionType, RememberedCondition>>;
  /**
   * Indexes of `spec.dependencies` (of `generation`) not enforced: definitely not served by their provider's export,
   * or not admitted by that provider (RULE_AUTHORS_ANNOTATION in src/api/references.ts).
   */
  excluded?: readonly number[];
}

export interface Verdicts {
  /** Rule key (`<cluster>/<name>`) → verdict. */
  rules: ReadonlyMap<string, RuleVerdict>;
  /** Provider path → the last logical cluster it resolved to. */
  paths: ReadonlyMap<string, LogicalClusterName>;
}

export const NO_VERDICTS: Verdicts = { rules: new Map(), paths: new Map() };

/** The verdict the controller keeps for a rule whose computed status is `status`. */
export function verdictOf(
  status: DependencyRuleStatus,
  uid: string | undefined,
  excluded: Iterable<number> = [],
): RuleVerdict {
  const conditions: RuleVerdict["conditions"] = {};
  for (const c of status.conditions ?? [])
    conditions[c.type] = { status: c.status, reason: c.reason, since: c.lastTransitionTime };
  const x = [...excluded].sort((a, b) => a - b);
  return {
    ...(uid !== undefined ? { uid } : {}),
    ...(status.observedGeneration !== undefined ? { generation: status.observedGeneration } : {}),
    conditions,
    ...(x.length > 0 ? { excluded: x } : {}),
  };
}

/** The dependencies of this generation the controller does not enforce (not served, or not admitted). */
export function excludedDependencies(v: RuleVerdict | undefined, generation: number | undefined): ReadonlySet<number> {
  return new Set(v && generation !== undefined && v.generation === generation ? (v.excluded ?? []) : []);
}

/** The conditions a verdict remembers, in the shape computeStatus takes as the previous status (no messages). */
export function rememberedStatus(v: RuleVerdict | undefined): DependencyRuleStatus | undefined {
  if (!v) return undefined;
  const conditions: Condition[] = [];
  for (const type of CONDITION_TYPES) {
    const c = v.conditions[type];
    if (c) conditions.push({ type, status: c.status, reason: c.reason, message: "", lastTransitionTime: c.since });
  }
  return { ...(v.generation !== undefined ? { observedGeneration: v.generation } : {}), conditions };
}

/** The verdict on the rule object with `uid`; a verdict on an earlier object of the same name does not count. */
export function verdictFor(verdicts: Verdicts, key: string, uid: string | undefined): RuleVerdict | undefined {
  const v = verdicts.rules.get(key);
  return v && (v.uid === undefined || v.uid === uid) ? v : undefined;
}

// ---- What the webhook decides from a verdict (the reasons are the controller's, src/controller/status.ts). ----

export const DEPENDENT_INVALID_REASON = "DependentInvalid";
export const CHECKS_DECLINED_REASON = "ChecksDeclined";

/**
 * What the rule's DependentsIndexed verdict means when the webhook's own index cannot answer:
 * `protected` (the index, or live lists, worked for this rule, possibly on another replica: fail closed where its
 * dependents may be), `not-enforced` (it never worked, or the author's revocation outlived its grace: decide as if
 * the rule were absent), `unknown` (no verdict yet: only this replica's own index can tell).
 */
export type IndexTrust = "protected" | "not-enforced" | "unknown";

/** DependentsIndexed reasons (src/controller/index-status.ts) by what they mean for enforcement. */
export const INDEX_PROTECTED_REASONS: readonly string[] = [
  "Indexed",
  "LiveLookup",
  "IndexRevoked",
  "IndexLost",
  "IndexResyncing",
];
export const INDEX_NOT_ENFORCED_REASONS: readonly string[] = [
  "IndexForbidden",
  "IndexFailing",
  "IndexRevocationExpired",
];

/** The reason of a verdict's condition; with `generation`, only when the verdict is about that generation. */
function reasonOf(v: RuleVerdict | undefined, type: ConditionType, generation?: number): string | undefined {
  if (!v || (generation !== undefined && v.generation !== generation)) return undefined;
  return v.conditions[type]?.reason;
}

/** The controller found this generation's dependent type not served by the rule's own workspace: not enforced. */
export function dependentRejected(v: RuleVerdict | undefined, generation: number | undefined): boolean {
  return generation !== undefined && reasonOf(v, "ReferencesValid", generation) === DEPENDENT_INVALID_REASON;
}

/** The controller could not check this generation because its author declined the read-only claims. */
export function checksDeclined(v: RuleVerdict | undefined, generation: number | undefined): boolean {
  return generation !== undefined && reasonOf(v, "ReferencesValid", generation) === CHECKS_DECLINED_REASON;
}

export function indexTrust(v: RuleVerdict | undefined): IndexTrust {
  const reason = reasonOf(v, "DependentsIndexed");
  if (reason === undefined) return "unknown";
  if (INDEX_PROTECTED_REASONS.includes(reason)) return "protected";
  return INDEX_NOT_ENFORCED_REASONS.includes(reason) ? "not-enforced" : "unknown";
}
