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
import type { WorkspacePath } from "../../api/types.ts";
import { compareStrings } from "../../util/json.ts";
import type { Verdicts } from "../../api/verdicts.ts";
import type { DependentType } from "../admission.ts";
import { RegistryState, type RegistryStateOptions } from "./registry-state.ts";
import {
  isNotEnforced,
  type IndexedType,
  type PathResolutions,
  type RegistryProblem,
  type RuleEntry,
  type RuleRegistry,
} from "./registry-model.ts";

export { DEPENDENT_INVALID_REASON, type IndexTrust } from "../../api/verdicts.ts";
export type { DependentType } from "../admission.ts";
export { NOT_ENFORCED } from "./contribution.ts";
export { RegistryState } from "./registry-state.ts";
export { newCounter, type RegistryCounter } from "./entry-index.ts";
export {
  isNotEnforced,
  type IndexedType,
  type PathResolutions,
  type RegistryProblem,
  type RuleEntry,
  type RuleMatch,
  type RuleRegistry,
} from "./registry-model.ts";

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

/** How many rules have at least one part not enforced (a fault of their own), for the gauge and its alert. */
export function notEnforcedCount(registry: RuleRegistry): number {
  return new Set(registry.problems.filter((p) => isNotEnforced(p.message)).map((p) => p.rule)).size;
}

/** A problem line for logs and rule authors: `rule root-cluster/vm-rule: spec.dependencies[0]…`. */
export function formatProblem(p: RegistryProblem): string {
  return `rule ${p.rule}: ${p.message}`;
}
