// Checks every rule's references against kcp once per pass: each (workspace, APIExport) pair is read once however
// many rules name it, and the verdicts decide what is installed (see desired.ts `excluded`) and the rules'
// ReferencesValid condition (status.ts).
import {
  checkAdmitted,
  checkDependency,
  checkDependent,
  combineChecks,
  type ExportFacts,
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

/** Verdicts by rule key, for rules with a valid dependent. `resolve` reads the paths providers admit as authors. */
export async function checkReferences(
  rules: readonly ParsedRule[],
  resolutions: ReadonlyMap<string, Resolution>,
  fetch: FetchExport,
  resolve: (path: WorkspacePath) => Promise<Resolution> = () =>
    Promise.resolve({ ok: false, transient: true, reason: "not resolved" }),
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
    const check = (dep: ParsedDependency, key: string) => {
      const f = facts.get(key)!;
      const served = checkDependency(dep, f);
      if (!served.ok || !f.found || !f.ruleAuthors) return served;
      const provider = wanted.get(key)!.cluster;
      return checkAdmitted(dep, admits(f.ruleAuthors, authors, provider, p.rule.key.cluster));
    };
    verdicts.set(
      ruleKeyString(p.rule.key),
      combineChecks(
        checkDependent(p.dependent, facts.get(p.dependentKey)!),
        p.deps.map(({ dep, key }) => ({ index: dep.index, check: check(dep, key) })),
      ),
    );
  }
  return verdicts;
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
