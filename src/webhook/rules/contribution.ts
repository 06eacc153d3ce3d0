// What one rule contributes to the registry: its entries under each protected (provider, group/resource) and each
// group/resource, and its problems. Pure, and a function of this rule alone (its object, the resolutions of its own
// paths, its own verdict, whether it is within its author's cap), which is what lets the registry update one rule at
// a time: a rule's contribution is derived again only when one of those changed, and written only where it differs.
//
// Faults stay with the rule that has them (docs/architecture.md, "Blast radius"). A dependency whose path has never
// resolved, definitely or not (no such workspace, no permission, kcp unreachable), protects nothing and refuses
// nobody: it is a problem of its own rule, counted as not enforced. Once resolved, the resolver keeps the last good
// answer through later transient failures, so a rule that was protecting keeps protecting its provider only.
// What the controller concluded also counts, as its verdicts in the dep-ctrl workspace say (src/api/verdicts.ts;
// never the rule's status, which its author can write): a dependent it rejected, references its author declined to
// let it check (unless the operator opts such rules in), and whether its dependents index ever worked.
import type { FieldPath } from "../../fieldpath/fieldpath.ts";
import type { ParsedRule } from "../../api/rule.ts";
import { overCapMessage } from "../../api/rule-cap.ts";
import { ruleKeyString, type GroupResource } from "../../api/types.ts";
import {
  checksDeclined,
  dependentRejected,
  excludedDependencies,
  indexTrust,
  type RuleVerdict,
} from "../../api/verdicts.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import type { PathResolutions, RegistryProblem, RuleEntry } from "./registry-model.ts";

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
  overCap: overCapMessage,
};

export const grKey = (gr: GroupResource): string => `${gr.group}/${gr.resource}`;
// "|" cannot occur in a logical cluster name, a group or a resource, so keys never collide.
export const providerKey = (provider: string, gr: GroupResource): string => `${provider}|${grKey(gr)}`;

/** One entry and a canonical print of it, so an unchanged entry is recognised and left where it is. */
export interface KeyedEntry {
  entry: RuleEntry;
  print: string;
}

export interface Contribution {
  /** providerKey → this rule's entry there. */
  byProvider: Map<string, KeyedEntry>;
  /** grKey → this rule's entry there (field paths of every provider merged), for the legacy /validate route. */
  byGroupResource: Map<string, KeyedEntry>;
  problems: RegistryProblem[];
  /** Everything above, canonically: equal prints, equal contributions. */
  print: string;
}

export const NO_CONTRIBUTION: Contribution = {
  byProvider: new Map(),
  byGroupResource: new Map(),
  problems: [],
  print: "",
};

export interface RuleInputs {
  rule: ParsedRule;
  verdict: RuleVerdict | undefined;
  /** Only this rule's own paths are read. */
  resolutions: PathResolutions;
  withinCap: boolean;
  enforceUnverified: boolean;
}

/** The part of a verdict this rule's contribution depends on; a verdict change that leaves it equal changes nothing. */
export function verdictPrint(v: RuleVerdict | undefined, generation: number | undefined): string {
  const excluded = [...excludedDependencies(v, generation)].join(",");
  return `${dependentRejected(v, generation)}|${checksDeclined(v, generation)}|${excluded}|${indexTrust(v)}`;
}

/** The part of a resolution a contribution depends on. */
export function resolutionPrint(r: Resolution | undefined): string {
  if (!r) return "";
  return r.ok ? `ok|${r.cluster}` : `no|${r.transient === true}|${r.reason}`;
}

/** Adds a field path under `key`: one entry per rule per key, so a rule never causes the same list twice. */
function addEntry(index: Map<string, RuleEntry>, key: string, make: () => RuleEntry, path: FieldPath): void {
  const same = index.get(key);
  if (!same) index.set(key, { ...make(), fieldPaths: [path] });
  else if (!same.fieldPaths.some((q) => q.source === path.source))
    index.set(key, { ...same, fieldPaths: [...same.fieldPaths, path] });
}

function keyed(index: Map<string, RuleEntry>): Map<string, KeyedEntry> {
  const out = new Map<string, KeyedEntry>();
  for (const [key, entry] of index) {
    const { rule, dependent, enforcement, index: trust } = entry;
    const paths = entry.fieldPaths.map((p) => p.source);
    out.set(key, { entry, print: JSON.stringify([rule, dependent, paths, enforcement, trust ?? null]) });
  }
  return out;
}

function finish(provider: Map<string, RuleEntry>, gr: Map<string, RuleEntry>, problems: RegistryProblem[]) {
  const byProvider = keyed(provider);
  const byGroupResource = keyed(gr);
  const prints = (m: Map<string, KeyedEntry>) => [...m].map(([k, e]) => `${k}=${e.print}`);
  const print = JSON.stringify([prints(byProvider), prints(byGroupResource), problems.map((p) => p.message)]);
  return { byProvider, byGroupResource, problems, print };
}

/** Whether the rule is left out whole, and why (a problem message), before its dependencies are looked at. */
function leftOut(inputs: RuleInputs, cap: number): string | undefined {
  const { rule, verdict } = inputs;
  if (!inputs.withinCap) return NOT_ENFORCED.overCap(cap);
  if (dependentRejected(verdict, rule.generation)) return NOT_ENFORCED.dependent;
  if (!inputs.enforceUnverified && checksDeclined(verdict, rule.generation)) return NOT_ENFORCED.declined;
  return undefined;
}

/** What one rule contributes (see the file comment). */
export function contribute(inputs: RuleInputs, cap: number): Contribution {
  const { rule, verdict, resolutions } = inputs;
  const key = ruleKeyString(rule.key);
  const out = leftOut(inputs, cap);
  if (out !== undefined) return finish(new Map(), new Map(), [{ rule: key, message: out }]);
  const problems: RegistryProblem[] = [];
  // Dependencies the controller found not served, or not admitted by their provider, gate nothing here either
  // (another rule's configuration may send the same resource's deletes to this webhook).
  const excluded = excludedDependencies(verdict, rule.generation);
  for (const i of excluded) problems.push({ rule: key, message: NOT_ENFORCED.excluded(i) });
  for (const message of rule.problems) problems.push({ rule: key, message });
  const provider = new Map<string, RuleEntry>();
  const gr = new Map<string, RuleEntry>();
  const make = (): RuleEntry => ({
    rule: key,
    dependent: { ...rule.dependent!, exportCluster: rule.key.cluster },
    fieldPaths: [],
    enforcement: rule.enforcement,
    index: indexTrust(verdict),
  });
  for (const dep of rule.dependencies.filter((d) => !excluded.has(d.index))) {
    const resolution = resolutions.get(dep.path);
    const target = { group: dep.target.group, resource: dep.target.resource };
    if (resolution?.ok) {
      addEntry(provider, providerKey(resolution.cluster, target), make, dep.fieldPath);
      addEntry(gr, grKey(target), make, dep.fieldPath);
    } else if (resolution && !resolution.transient) {
      problems.push({ rule: key, message: `spec.dependencies[${dep.index}] protects nothing: ${resolution.reason}` });
    } else {
      // Never resolved (a 403, kcp unreachable): nobody's delete waits for it; the rule's status says why.
      const reason = resolution?.reason ?? `workspace ${dep.path} not resolved yet`;
      problems.push({ rule: key, message: NOT_ENFORCED.unresolved(dep.index, reason) });
    }
  }
  // A local target (a Secret of the consumer workspace) is checked when kcp calls the configuration the controller
  // wrote in that consumer workspace, whose URL names this rule's own workspace (docs/architecture.md, "Local
  // targets"): so it is found under (the rule's cluster, the core type), and the legacy route never sees it.
  for (const dep of rule.localDependencies)
    addEntry(provider, providerKey(rule.key.cluster, dep.target), make, dep.fieldPath);
  return finish(provider, gr, problems);
}
