// The rules the user may read, and the prologue of every command that reads them: the rules of the named workspaces
// (or of every workspace below root the user may list), what could not be read noted for stderr, and the workspace's
// objects of the types the rules name.
import { parseRule } from "../api/rule.ts";
import { DEPENDENCY_RULES_PATH, WORKSPACE_PATH_RE } from "../api/wire.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import type { ApiResource } from "./discovery.ts";
import { dependenciesOf, type RuleInWorkspace } from "./graph.ts";
import { listingKey, type TypeListing } from "./references.ts";
import { explain, listObjects, PluginError, resourceFor, type Session } from "./session.ts";

/** Stops a walk from reading a whole large kcp by accident. */
export const MAX_WORKSPACES = 500;

export interface RuleScan {
  rules: RuleInWorkspace[];
  /** The objects as read, for their status (Ready). */
  objects: { workspace: string; object: Record<string, unknown> }[];
  /** Workspaces looked in. */
  searched: string[];
  /** What could not be read, one sentence each. */
  skipped: string[];
}

/** Every workspace below `root` the user may list, breadth first, `root` included; unreadable ones are noted. */
export async function walkWorkspaces(base: RestClient, root: string, skipped: string[]): Promise<string[]> {
  const found: string[] = [];
  const queue = [root];
  while (queue.length > 0 && found.length < MAX_WORKSPACES) {
    const path = queue.shift()!;
    found.push(path);
    try {
      const list = await base
        .forCluster(path)
        .listAll<{ metadata: { name: string } }>("/apis/tenancy.kcp.io/v1alpha1/workspaces");
      for (const w of list.items.map((i) => i.metadata.name).sort()) queue.push(`${path}:${w}`);
    } catch (err) {
      if (isApiError(err, 403)) skipped.push(`you may not list the workspaces in ${path}`);
      else if (!isApiError(err, 404)) skipped.push(explain(err, `list the workspaces in ${path}`).message);
    }
  }
  if (queue.length > 0) skipped.push(`stopped after ${MAX_WORKSPACES} workspaces: name them with --rule-workspace`);
  return found;
}

/**
 * The DependencyRules in each workspace. A named workspace that cannot be read is an error (unless `skipUnreadable`:
 * then it is skipped with a note, as teardown's plan can do without it); found by walking, it is skipped with a note
 * (the user sees what they may read, no more). A name that is no workspace path is always an error.
 */
export async function readRules(s: Session, named: readonly string[], skipUnreadable = false): Promise<RuleScan> {
  const skipped: string[] = [];
  const paths = named.length > 0 ? [...named] : await walkWorkspaces(s.base, "root", skipped);
  const scan: RuleScan = { rules: [], objects: [], searched: paths, skipped };
  const RULES = DEPENDENCY_RULES_PATH;
  for (const workspace of paths) {
    if (!WORKSPACE_PATH_RE.test(workspace))
      throw new PluginError(`--rule-workspace ${workspace}: not a workspace path like root:org:team`);
    try {
      const list = await s.base.forCluster(workspace).listAll<Record<string, unknown>>(RULES);
      for (const object of list.items) {
        scan.objects.push({ workspace, object });
        const rule = parseRule(object);
        if (rule) scan.rules.push({ workspace, rule });
      }
    } catch (err) {
      // 404: the workspace does not bind the DependencyRule API, so it holds no rules.
      if (isApiError(err, 404)) continue;
      const e = isApiError(err, 403)
        ? new PluginError(`you may not read dependencyrules in ${workspace}`)
        : explain(err, `read dependencyrules in ${workspace}`);
      if (named.length > 0 && !skipUnreadable) throw e;
      skipped.push(e.message);
    }
  }
  return scan;
}

/** The rules' types as listed in the session's workspace; `targets` are the dependency types found, with their items. */
export interface ListedTypes {
  listings: Map<string, TypeListing>;
  targets: { resource: ApiResource; items: readonly unknown[] }[];
}

/** Every type the rules name (dependents and dependencies), listed in the session's workspace. */
export async function listRuleTypes(s: Session, rules: readonly RuleInWorkspace[]): Promise<ListedTypes> {
  const wanted = new Map<string, { group: string; resource: string; target: boolean }>();
  for (const { rule } of rules) {
    if (!rule.dependent) continue;
    const d = rule.dependent;
    const key = listingKey(d.group, d.resource);
    wanted.set(key, { group: d.group, resource: d.resource, target: wanted.get(key)?.target ?? false });
    for (const dep of dependenciesOf(rule))
      wanted.set(listingKey(dep.target.group, dep.target.resource), { ...dep.target, target: true });
  }
  const out: ListedTypes = { listings: new Map(), targets: [] };
  for (const [key, t] of wanted) {
    const r = await resourceFor(s, t.group, t.resource);
    const listing: TypeListing = { group: t.group, resource: t.resource };
    if (r) {
      listing.kind = r.kind;
      listing.namespaced = r.namespaced;
      const items = await listObjects(s, r);
      if (items) listing.items = items;
      if (items && t.target) out.targets.push({ resource: r, items });
    }
    out.listings.set(key, listing);
  }
  return out;
}

/** Said when no rule was readable: where rules live, and how to name them. */
function noRulesNote(scan: RuleScan): string {
  return (
    `no DependencyRules readable in ${scan.searched.length} workspace(s)` +
    (scan.skipped.length > 0 ? ` (${scan.skipped.length} could not be read)` : "") +
    `: rules live in provider workspaces; name them with --rule-workspace if you may read them`
  );
}

/**
 * The prologue of graph, check and verify: the rules (readRules), and the notes for stderr: each workspace that could
 * not be read, and, when no rule was found, where rules live.
 */
export async function rulesWithNotes(
  s: Session,
  named: readonly string[],
): Promise<{ scan: RuleScan; notes: string[] }> {
  const scan = await readRules(s, named);
  const notes = [...scan.skipped];
  if (scan.rules.length === 0) notes.push(noRulesNote(scan));
  return { scan, notes };
}
