// The rule registry: what the webhook knows about DependencyRules, metadata only. It is rebuilt from the full list
// of rules every time anything changes (level-triggered), by a pure function, and then read by DELETE decisions.
//
// Reverse index: (provider logical cluster, protected group/resource) → rules, so a DELETE arriving at
// /validate/<provider> finds its rules in O(1), and two providers exporting the same group/resource never see each
// other's rules. The legacy /validate (no provider in the URL, off unless --legacy-validate-route) matches by
// group/resource across all providers.
//
// Faults stay with the rule that has them (docs/architecture.md, "Blast radius"). A dependency whose path has never
// resolved, definitely or not (no such workspace, no permission, kcp unreachable), protects nothing and refuses
// nobody: it is a problem of its own rule, counted as not enforced. Once resolved, the resolver keeps the last good
// answer through later transient failures, so a rule that was protecting keeps protecting its provider only.
// What the controller concluded also counts, as its verdicts in the dep-ctrl workspace say (src/api/verdicts.ts;
// never the rule's status, which its author can write): a dependent it rejected, references its author declined to
// let it check (unless the operator opts such rules in), and whether its dependents index ever worked.
import { type FieldPath } from "../../fieldpath/fieldpath.ts";
import { parseRule, referencedPaths, type ParsedRule } from "../../api/rule.ts";
import { dependentTypeKey } from "../../api/index-report.ts";
import type { Enforcement } from "../../api/schema.ts";
import { ruleKeyString, type GroupResource, type LogicalClusterName, type WorkspacePath } from "../../api/types.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import { asRecord, compareStrings } from "../../util/json.ts";
import {
  checksDeclined,
  dependentRejected,
  excludedDependencies,
  indexTrust,
  NO_VERDICTS,
  verdictFor,
  type IndexTrust,
  type Verdicts,
} from "../../api/verdicts.ts";
import type { DependentType } from "../admission.ts";

export { DEPENDENT_INVALID_REASON, type IndexTrust } from "../../api/verdicts.ts";
export type { DependentType } from "../admission.ts";

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

export interface RegistryOptions {
  /** The operator's opt-in (webhook flag) for rules whose author declined the read-only checks. */
  enforceUnverified?: boolean;
  /** The controller's verdicts on the rules (none: every rule is as yet unjudged). */
  verdicts?: Verdicts;
}

/** The provider paths the rules refer to, for the caller to resolve before buildRegistry. */
export function rulePaths(objects: readonly unknown[]): WorkspacePath[] {
  return referencedPaths(objects.flatMap((o) => parseRule(o) ?? []));
}

const grKey = (gr: GroupResource): string => `${gr.group}/${gr.resource}`;
// "|" cannot occur in a logical cluster name, a group or a resource, so keys never collide.
const providerKey = (provider: string, gr: GroupResource): string => `${provider}|${grKey(gr)}`;

type MutableEntry = RuleEntry & { fieldPaths: FieldPath[] };

/** Adds a rule's field path under `key`; one entry per rule per key, so a rule never causes the same list twice. */
function addEntry(index: Map<string, MutableEntry[]>, key: string, rule: EnforceableRule, path: FieldPath) {
  const list = index.get(key) ?? [];
  const ruleKey = ruleKeyString(rule.key);
  const same = list.find((e) => e.rule === ruleKey);
  if (!same) {
    const dependent = { ...rule.dependent!, exportCluster: rule.key.cluster };
    list.push({ rule: ruleKey, dependent, fieldPaths: [path], enforcement: rule.enforcement, index: rule.trust });
    index.set(key, list);
    return true;
  }
  if (!same.fieldPaths.some((q) => q.source === path.source)) same.fieldPaths.push(path);
  return false;
}

/** The rules that may be enforced, sorted by key; the others go to `problems` with why they are not enforced. */
function enforceableRules(
  objects: readonly unknown[],
  problems: RegistryProblem[],
  opts: RegistryOptions,
): EnforceableRule[] {
  const rules: EnforceableRule[] = [];
  for (const obj of objects) {
    const rule = parseRule(obj);
    const meta = asRecord(asRecord(obj)?.["metadata"]);
    const name = meta?.["name"];
    if (!rule) {
      problems.push({
        rule: `/${typeof name === "string" ? name : ""}`,
        message: "rule has no name or kcp.io/cluster annotation",
      });
      continue;
    }
    const key = ruleKeyString(rule.key);
    const uid = meta?.["uid"];
    const verdict = verdictFor(opts.verdicts ?? NO_VERDICTS, key, typeof uid === "string" ? uid : undefined);
    if (dependentRejected(verdict, rule.generation)) problems.push({ rule: key, message: NOT_ENFORCED.dependent });
    else if (!opts.enforceUnverified && checksDeclined(verdict, rule.generation))
      problems.push({ rule: key, message: NOT_ENFORCED.declined });
    else {
      // Dependencies the controller found not served, or not admitted by their provider, gate nothing here either
      // (another rule's configuration may send the same resource's deletes to this webhook).
      const excluded = excludedDependencies(verdict, rule.generation);
      for (const i of excluded) problems.push({ rule: key, message: NOT_ENFORCED.excluded(i) });
      const dependencies = rule.dependencies.filter((d) => !excluded.has(d.index));
      rules.push({ ...rule, dependencies, trust: indexTrust(verdict) });
    }
  }
  return rules.sort((a, b) => compareStrings(ruleKeyString(a.key), ruleKeyString(b.key)));
}

/** Problem messages of rules left out whole; every one starts with "not enforced" (counted by notEnforcedCount). */
export const NOT_ENFORCED = {
  dependent: "not enforced: its dependent type is not valid (see its status)",
  declined:
    "not enforced: its author declined the read-only claims, so its references were never checked (see its status)",
  unresolved: (index: number, reason: string) =>
    `not enforced: spec.dependencies[${index}] has never resolved: ${reason}`,
  excluded: (index: number) =>
    `not enforced: spec.dependencies[${index}] is not served by its provider's export, or not admitted by its ` +
    "provider (see its status)",
};

type EnforceableRule = ParsedRule & { trust: IndexTrust };

/**
 * Builds the registry from every rule object (as served by kcp) and the resolutions of their provider paths. Pure:
 * same input, same registry. Rules are processed in key order so entries (and therefore lookups and messages) come
 * out in a stable order.
 */
export function buildRegistry(
  objects: readonly unknown[],
  resolutions: PathResolutions,
  opts: RegistryOptions = {},
): RuleRegistry {
  const byProvider = new Map<string, MutableEntry[]>();
  const byGroupResource = new Map<string, MutableEntry[]>();
  const problems: RegistryProblem[] = [];
  const ruleKeys = new Set<string>();
  let entryCount = 0;

  for (const rule of enforceableRules(objects, problems, opts)) {
    const key = ruleKeyString(rule.key);
    for (const message of rule.problems) problems.push({ rule: key, message });
    for (const dep of rule.dependencies) {
      const resolution = resolutions.get(dep.path);
      const gr = { group: dep.target.group, resource: dep.target.resource };
      if (resolution?.ok) {
        if (addEntry(byProvider, providerKey(resolution.cluster, gr), rule, dep.fieldPath)) entryCount++;
        addEntry(byGroupResource, grKey(gr), rule, dep.fieldPath);
        ruleKeys.add(key);
      } else if (resolution && !resolution.transient) {
        problems.push({ rule: key, message: `spec.dependencies[${dep.index}] protects nothing: ${resolution.reason}` });
      } else {
        // Never resolved (a 403, kcp unreachable): nobody's delete waits for it; the rule's status says why.
        const reason = resolution?.reason ?? `workspace ${dep.path} not resolved yet`;
        problems.push({ rule: key, message: NOT_ENFORCED.unresolved(dep.index, reason) });
      }
    }
  }

  const types = indexedTypes([...byProvider.values()].flat());
  return {
    ruleCount: ruleKeys.size,
    entryCount,
    problems,
    dependentTypes: () => types,
    find(provider, gr) {
      const entries =
        provider === undefined ? byGroupResource.get(grKey(gr)) : byProvider.get(providerKey(provider, gr));
      return { entries: entries ?? [] };
    },
  };
}

/** How many rules have at least one part not enforced (a fault of their own), for the gauge and its alert. */
export function notEnforcedCount(registry: RuleRegistry): number {
  return new Set(registry.problems.filter((p) => p.message.startsWith("not enforced")).map((p) => p.rule)).size;
}

/** A problem line for logs and rule authors: `rule root-cluster/vm-rule: spec.dependencies[0]…`. */
export function formatProblem(p: RegistryProblem): string {
  return `rule ${p.rule}: ${p.message}`;
}
