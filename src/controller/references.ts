// Checks every rule's references against kcp once per pass: each (workspace, APIExport) pair is read once however
// many rules name it, and the verdicts decide what is installed (see desired.ts `excluded`) and the rules'
// ReferencesValid condition (status.ts).
import {
  checkAdmitted,
  checkDependency,
  checkDependent,
  combineChecks,
  unconfirmed,
  type ExportFacts,
  type ReferenceCheck,
  type ReferencesVerdict,
} from "../api/references.ts";
import type { ParsedDependency, ParsedRule } from "../api/rule.ts";
import { ruleKeyString, type GroupResource, type LogicalClusterName, type WorkspacePath } from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";

export type FetchExport = (
  cluster: LogicalClusterName,
  exportName: string,
  resources: GroupResource[],
) => Promise<ExportFacts>;

/**
 * Verdicts by rule key, for rules with a valid dependent. `resolve` reads the paths providers admit as authors;
 * `log` gets what a verdict does not tell its author about other workspaces (its `hidden`), for the operator.
 */
export async function checkReferences(
  rules: readonly ParsedRule[],
  resolutions: ReadonlyMap<string, Resolution>,
  fetch: FetchExport,
  resolve: (path: WorkspacePath) => Promise<Resolution> = () =>
    Promise.resolve({ ok: false, transient: true, reason: "not resolved" }),
  log?: (rule: string, unconfirmed: string[]) => void,
): Promise<Map<string, ReferencesVerdict>> {
  // First collect what to read, so each export is fetched once with every resource asked of it.
  const wanted = new Map<string, { cluster: LogicalClusterName; exportName: string; resources: GroupResource[] }>();
  const want = (cluster: LogicalClusterName, exportName: string, gr: GroupResource): string => {
    const key = `${cluster}|${exportName}`;
    const entry = wanted.get(key) ?? { cluster, exportName, resources: [] };
    if (!entry.resources.some((r) => r.group === gr.group && r.resource === gr.resource)) entry.resources.push(gr);
    wanted.set(key, entry);
    return key;
  };
  const plans = rules.flatMap((rule) => {
    if (!rule.dependent) return [];
    const dependentKey = want(rule.key.cluster, rule.dependent.apiExportName, rule.dependent);
    const deps = rule.dependencies.flatMap((dep) => {
      const r = resolutions.get(dep.path);
      return r?.ok ? [{ dep, key: want(r.cluster, dep.exportName, dep.target) }] : [];
    });
    return [{ rule, dependent: rule.dependent, dependentKey, deps }];
  });

  const facts = new Map<string, ExportFacts>();
  await Promise.all(
    [...wanted].map(async ([key, w]) => facts.set(key, await fetch(w.cluster, w.exportName, w.resources))),
  );

  const authors = await authorClusters(facts.values(), resolve);
  const verdicts = new Map<string, ReferencesVerdict>();
  for (const p of plans) {
    const hidden: string[] = [];
    const check = (dep: ParsedDependency, key: string): ReferenceCheck => {
      const f = facts.get(key)!;
      const provider = wanted.get(key)!.cluster;
      const served = checkDependency(dep, f);
      if (!served.ok) return provider === p.rule.key.cluster ? served : unconfirmedTo(dep, served, hidden);
      if (!f.found || !f.ruleAuthors) return served;
      return checkAdmitted(dep, admits(f.ruleAuthors, authors, provider, p.rule.key.cluster));
    };
    const verdict = combineChecks(
      checkDependent(p.dependent, facts.get(p.dependentKey)!),
      p.deps.map(({ dep, key }) => ({ index: dep.index, check: check(dep, key) })),
    );
    verdicts.set(ruleKeyString(p.rule.key), hidden.length > 0 ? { ...verdict, hidden } : verdict);
    if (hidden.length > 0) log?.(ruleKeyString(p.rule.key), hidden);
  }
  return verdicts;
}

/**
 * A dependency in another tenant's workspace that does not check out, as its author is told it: unconfirmed(), the
 * words /validate-rules uses, whatever kcp answered (export missing, not readable, serving something else). What it
 * decides stays (`definite`: not installed); the real message goes to `hidden`, for the controller's log.
 */
function unconfirmedTo(dep: ParsedDependency, check: ReferenceCheck & { ok: false }, hidden: string[]): ReferenceCheck {
  hidden.push(check.message);
  return { ok: false, definite: check.definite, message: unconfirmed(dep) };
}

/** Every workspace path some provider admits as an author, resolved once per pass. */
async function authorClusters(
  facts: Iterable<ExportFacts>,
  resolve: (path: WorkspacePath) => Promise<Resolution>,
): Promise<Map<string, Resolution>> {
  const paths = new Set<string>();
  for (const f of facts) if (f.found) for (const p of f.ruleAuthors ?? []) paths.add(p);
  const out = new Map<string, Resolution>();
  await Promise.all([...paths].map(async (p) => out.set(p, await resolve(p as WorkspacePath))));
  return out;
}

/**
 * Whether a provider whose export admits `allowed` admits rules of `author`: its own always; another when one of
 * the paths resolves to it; undefined when none does but some could not be resolved now (the check cannot be made).
 */
function admits(
  allowed: readonly string[],
  resolved: ReadonlyMap<string, Resolution>,
  provider: LogicalClusterName,
  author: LogicalClusterName,
): boolean | undefined {
  if (provider === author) return true;
  const answers = allowed.map((p) => resolved.get(p));
  if (answers.some((r) => r?.ok && r.cluster === author)) return true;
  return answers.some((r) => !r || (!r.ok && r.transient === true)) ? undefined : false;
}
