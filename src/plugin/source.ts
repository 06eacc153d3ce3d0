// The plugin's I/O: the user's own kubeconfig and credentials, discovery, the rules it may read, the objects of one
// workspace, and the dry-run DELETE. Every kcp answer the user may not see becomes a sentence, never a stack trace.
import { parseRule } from "../api/rule.ts";
import { DEPENDENCY_RULES_PATH, WORKSPACE_PATH_RE } from "../api/wire.ts";
import { loadKcpConnection } from "../kcp/kubeconfig.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import type { Connection } from "./args.ts";
import { apiPrefix, resourcesOf, splitQuery, type ApiResource } from "./discovery.ts";
import type { RuleInWorkspace } from "./graph.ts";
import { listingKey, type TypeListing } from "./references.ts";

/** A failure the user can act on; exit code 2 unless said otherwise. */
export class PluginError extends Error {
  override name = "PluginError";
}

export interface Session {
  base: RestClient;
  /** The workspace the command acts in, and a client rooted there. */
  workspace: string;
  ws: RestClient;
  /** The context's namespace, else "default". */
  namespace: string;
}

export function openSession(conn: Connection): Session {
  let kcp;
  try {
    kcp = loadKcpConnection({ kubeconfig: conn.kubeconfig, context: conn.context });
  } catch (err) {
    throw new PluginError((err as Error).message);
  }
  const workspace = conn.workspace ?? kcp.workspace;
  if (workspace === "")
    throw new PluginError(
      "the kubeconfig's server names no kcp workspace (…/clusters/<path>): pass --workspace <path>, e.g. root:consumer1",
    );
  if (!WORKSPACE_PATH_RE.test(workspace) && !/^[a-z0-9]+$/.test(workspace))
    throw new PluginError(`--workspace ${workspace}: not a workspace path like root:org:team`);
  const namespace = kcp.namespace ?? "default";
  return {
    base: kcp.base,
    workspace,
    ws: kcp.base.forCluster(workspace),
    namespace,
  };
}

/** An API error or a network failure, said in the user's terms: `what` reads "list vpcs in root:consumer1". */
export function explain(err: unknown, what: string): PluginError {
  if (err instanceof PluginError) return err;
  if (isApiError(err, 403))
    return new PluginError(
      `you may not ${what} (403 Forbidden; kcp also answers so for a workspace that does not exist)`,
    );
  if (isApiError(err, 401)) return new PluginError(`kcp does not accept your credentials (401): cannot ${what}`);
  if (isApiError(err, 404)) return new PluginError(`cannot ${what}: not found (404)`);
  if (isApiError(err)) return new PluginError(`cannot ${what}: ${err.status} ${err.reason}: ${err.message}`);
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ECONNREFUSED" || e?.code === "ENOTFOUND" || e?.code === "EHOSTUNREACH")
    return new PluginError(`cannot reach kcp (${e.code}): cannot ${what}`);
  return new PluginError(`cannot ${what}: ${(err as Error)?.message ?? String(err)}`);
}

/** The resources a workspace serves, in the group the query names or in all groups (preferred versions). */
export async function discover(s: Session, query: string): Promise<ApiResource[]> {
  const { group } = splitQuery(query);
  const where = `read the API discovery of ${s.workspace}`;
  let groups: { name: string; version: string }[];
  try {
    const list = await s.ws.get<{ groups?: { name: string; preferredVersion?: { version: string } }[] }>("/apis");
    groups = (list.groups ?? [])
      .filter((g) => group === undefined || g.name === group)
      .map((g) => ({ name: g.name, version: g.preferredVersion?.version ?? "" }))
      .filter((g) => g.version !== "");
  } catch (err) {
    throw explain(err, where);
  }
  if (group === undefined) groups.unshift({ name: "", version: "v1" });
  const lists = await Promise.all(
    groups.map(async (g) => {
      try {
        return resourcesOf(g.name, g.version, await s.ws.get(apiPrefix(g.name, g.version)));
      } catch (err) {
        if (isApiError(err, 404) || isApiError(err, 503)) return []; // a group going away or not ready: skip it
        throw explain(err, where);
      }
    }),
  );
  return lists.flat();
}

/** The resource of one group/resource in a workspace, or undefined when the workspace does not serve it. */
export async function resourceFor(s: Session, group: string, resource: string): Promise<ApiResource | undefined> {
  const found = await discover(s, `${resource}.${group}`);
  return found.find((r) => r.name === resource);
}

/**
 * A server-side dry-run DELETE of `path` in the session's workspace: kcp runs the admission webhooks as for a real
 * delete and changes nothing. A refusal is an answer, not an error: its HTTP status and the Status object whole, with
 * the `details.causes` that list a webhook's blockers (the body's text when it was no Status).
 */
export async function dryRunDelete(
  s: Session,
  path: string,
): Promise<{ allowed: true } | { status: number; body: unknown }> {
  try {
    await s.ws.request("DELETE", path, { query: { dryRun: "All" } });
    return { allowed: true };
  } catch (err) {
    if (!isApiError(err)) throw err;
    return { status: err.status, body: err.apiStatus ?? err.statusMessage };
  }
}

// ---- rules ----

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
 * The DependencyRules in each workspace. A named workspace that cannot be read is an error; found by walking, it is
 * skipped with a note (the user sees what they may read, no more).
 */
export async function readRules(s: Session, named: readonly string[]): Promise<RuleScan> {
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
      if (named.length > 0) throw e;
      skipped.push(e.message);
    }
  }
  return scan;
}

/** All objects of one type in the session's workspace, across namespaces; undefined when the type is not served. */
export async function listObjects(
  s: Session,
  r: { group: string; version: string; name: string },
): Promise<unknown[] | undefined> {
  try {
    return (await s.ws.listAll<unknown>(`${apiPrefix(r.group, r.version)}/${r.name}`)).items;
  } catch (err) {
    if (isApiError(err, 404)) return undefined;
    throw explain(err, `list ${r.name}.${r.group} in ${s.workspace}`);
  }
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
    for (const dep of rule.dependencies)
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
