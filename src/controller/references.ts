// Checks every rule's references against kcp once per pass: each (workspace, APIExport) pair is read once however
// many rules name it, and the verdicts decide what is installed (see desired.ts `excluded`) and the rules'
// ReferencesValid condition (status.ts).
import {
  checkDependency,
  checkDependent,
  combineChecks,
  type ExportFacts,
  type ReferencesVerdict,
} from "../api/references.ts";
import type { ParsedRule } from "../api/rule.ts";
import { ruleKeyString, type GroupResource, type LogicalClusterName } from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";

export type FetchExport = (
  cluster: LogicalClusterName,
  exportName: string,
  resources: GroupResource[],
) => Promise<ExportFacts>;

/** Verdicts by rule key, for rules with a valid dependent. */
export async function checkReferences(
  rules: readonly ParsedRule[],
  resolutions: ReadonlyMap<string, Resolution>,
  fetch: FetchExport,
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

  const verdicts = new Map<string, ReferencesVerdict>();
  for (const p of plans) {
    verdicts.set(
      ruleKeyString(p.rule.key),
      combineChecks(
        checkDependent(p.dependent, facts.get(p.dependentKey)!),
        p.deps.map(({ dep, key }) => ({ index: dep.index, check: checkDependency(dep, facts.get(key)!) })),
      ),
    );
  }
  return verdicts;
}
