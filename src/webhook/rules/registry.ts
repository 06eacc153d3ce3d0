// The rule registry: what the webhook knows about DependencyRules, metadata only, read by DELETE decisions. Kept up
// to date one rule at a time (registry-state.ts) from what each rule contributes (contribution.ts, which says which
// faults leave a rule or a dependency not enforced); buildRegistry is the same from empty.
//
// Reverse index: (provider logical cluster, protected group/resource) → rules, so a DELETE arriving at
// /validate/<provider> finds its rules in O(1), and two providers exporting the same group/resource never see each
// other's rules. The legacy /validate (no provider in the URL, off unless --legacy-validate-route) matches by
// group/resource across all providers.
import { type FieldPath } from "../../fieldpath/fieldpath.ts";
import { parseRule, referencedPaths } from "../../api/rule.ts";
import { dependentTypeKey } from "../../api/index-report.ts";
import type { Enforcement } from "../../api/schema.ts";
import type { GroupResource, LogicalClusterName, WorkspacePath } from "../../api/types.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import { compareStrings } from "../../util/json.ts";
import type { IndexTrust, Verdicts } from "../../api/verdicts.ts";
import type { DependentType } from "../admission.ts";
import { RegistryState, type RegistryStateOptions } from "./registry-state.ts";

export { DEPENDENT_INVALID_REASON, type IndexTrust } from "../../api/verdicts.ts";
export type { DependentType } from "../admission.ts";
export { NOT_ENFORCED } from "./contribution.ts";
export { RegistryState } from "./registry-state.ts";
export { newCounter, type RegistryCounter } from "./entry-index.ts";

/** One rule as seen from one protected (provider, group/resource): whose objects to list and where to look. */
export interface RuleEntry {
  /** `<rule cluster>/<rule name>`. */
  rule: string;
  dependent: DependentType;
  /** Every field path of this rule that points at this group/resource (usually one). */
  fieldPaths: readonly FieldPath[];
  /** Deny, or Warn (a referenced delete is allowed with a warning). */
  enforcement: Enforcement;
  /** What the controller's verdict says of its dependents index, for when the index cannot answer (see IndexTrust). */
  index?: IndexTrust;
}

export interface RuleMatch {
  entries: readonly RuleEntry[];
  /**
   * Set by the rule source while a shard's DependencyRules cannot be seen and this match's rules may be among them
   * (src/webhook/rules/visibility.ts): refused with 503. `why` (rules, endpoint URLs, errors) is for the log only.
   */
  unseen?: { endpoints: readonly string[]; rules: readonly string[]; why: string };
}

/** A rule or dependency left out of the registry, and why (logged by the caller, never shown to a deleter). */
export interface RegistryProblem {
  rule: string;
  message: string;
}

export interface RuleRegistry {
  /** Rules registered with at least one dependency. */
  readonly ruleCount: number;
  /** Registered (rule, provider, group/resource) entries. */
  readonly entryCount: number;
  readonly problems: readonly RegistryProblem[];
  /** The rules protecting `gr` of `provider`; without a provider (legacy /validate), of any provider. */
  find(provider: LogicalClusterName | undefined, gr: GroupResource): RuleMatch;
  /** Every dependent type lookups may ask for, with every field path asked for it: what the index must watch. */
  dependentTypes(): readonly IndexedType[];
}

/** One dependent type the dependents index watches, and the field paths (sorted by source) it must read. */
export interface IndexedType {
  dependent: DependentType;
  fieldPaths: readonly FieldPath[];
}

/** Groups entries by dependent type (dependentTypeKey), merging their field paths; sorted, so the result is stable. */
export function indexedTypes(entries: Iterable<RuleEntry>): IndexedType[] {
  const byType = new Map<string, { dependent: DependentType; paths: Map<string, FieldPath> }>();
  for (const e of entries) {
    const key = dependentTypeKey(e.dependent);
    const t = byType.get(key) ?? { dependent: e.dependent, paths: new Map<string, FieldPath>() };
    byType.set(key, t);
    for (const p of e.fieldPaths) t.paths.set(p.source, p);
  }
  return [...byType.keys()].sort(compareStrings).map((key) => {
    const t = byType.get(key)!;
    const sources = [...t.paths.keys()].sort(compareStrings);
    return { dependent: t.dependent, fieldPaths: sources.map((src) => t.paths.get(src)!) };
  });
}

/** What the caller knows about each apiExportRef.path; undefined means not resolved yet (not enforced). */
export type PathResolutions = ReadonlyMap<string, Resolution>;

export interface RegistryOptions extends RegistryStateOptions {
  /** The controller's verdicts on the rules (none: every rule is as yet unjudged). */
  verdicts?: Verdicts;
}

/** The provider paths the rules refer to, for the caller to resolve before buildRegistry. */
export function rulePaths(objects: readonly unknown[]): WorkspacePath[] {
  return referencedPaths(objects.flatMap((o) => parseRule(o) ?? []));
}

/**
 * Builds the registry from every rule object (as served by kcp) and the resolutions of their provider paths: the
 * incremental registry (registry-state.ts) started from empty. Pure: same input, same registry; entries (and
 * therefore lookups and messages) come out in rule key order.
 */
export function buildRegistry(
  objects: readonly unknown[],
  resolutions: PathResolutions,
  opts: RegistryOptions = {},
): RuleRegistry {
  const state = new RegistryState(opts);
  state.observe(objects);
  state.settle(resolutions, opts.verdicts);
  return state.current();
}

/** Whether a problem leaves (part of) its rule not enforced: those messages start with "not enforced". */
export const isNotEnforced = (message: string): boolean => message.startsWith("not enforced");

/** How many rules have at least one part not enforced (a fault of their own), for the gauge and its alert. */
export function notEnforcedCount(registry: RuleRegistry): number {
  return new Set(registry.problems.filter((p) => isNotEnforced(p.message)).map((p) => p.rule)).size;
}

/** A problem line for logs and rule authors: `rule root-cluster/vm-rule: spec.dependencies[0]…`. */
export function formatProblem(p: RegistryProblem): string {
  return `rule ${p.rule}: ${p.message}`;
}
