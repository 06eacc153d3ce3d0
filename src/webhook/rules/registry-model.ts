// The registry's model: what a DELETE decision reads of the rules (entries, matches, problems), with no behaviour
// beyond one predicate. The registry's parts (registry.ts, registry-state.ts, contribution.ts, entry-index.ts) all
// import it, and it imports none of them.
import type { FieldPath } from "../../fieldpath/fieldpath.ts";
import type { Enforcement } from "../../api/schema.ts";
import type { GroupResource, LogicalClusterName } from "../../api/types.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import type { IndexTrust } from "../../api/verdicts.ts";
import type { DependentType } from "../admission.ts";

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

/** What the caller knows about each apiExportRef.path; undefined means not resolved yet (not enforced). */
export type PathResolutions = ReadonlyMap<string, Resolution>;

/** Whether a problem leaves (part of) its rule not enforced: those messages start with "not enforced". */
export const isNotEnforced = (message: string): boolean => message.startsWith("not enforced");
