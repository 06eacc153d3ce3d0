// Which resource the user means by `vpc`, `vpcs`, `VPC` or `vpcs.network.test.io`, as kubectl resolves it:
// plural, singular, kind or short name, optionally qualified by group. Pure over discovery documents.

export interface ApiResource {
  group: string;
  version: string;
  /** Plural, e.g. `vpcs`. */
  name: string;
  singularName?: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  /** What it serves (`list`, `delete`, ...), when discovery says. */
  verbs?: string[];
}

/** One `/apis/<g>/<v>` (or `/api/v1`) APIResourceList → its top-level resources (subresources dropped). */
export function resourcesOf(group: string, version: string, list: unknown): ApiResource[] {
  const resources = (list as { resources?: unknown } | undefined)?.resources;
  if (!Array.isArray(resources)) return [];
  const out: ApiResource[] = [];
  for (const r of resources as Record<string, unknown>[]) {
    const name = r["name"];
    const kind = r["kind"];
    if (typeof name !== "string" || name.includes("/") || typeof kind !== "string") continue;
    const res: ApiResource = { group, version, name, kind, namespaced: r["namespaced"] === true };
    if (typeof r["singularName"] === "string" && r["singularName"] !== "") res.singularName = r["singularName"];
    if (Array.isArray(r["shortNames"])) res.shortNames = (r["shortNames"] as unknown[]).map(String);
    if (Array.isArray(r["verbs"])) res.verbs = (r["verbs"] as unknown[]).map(String);
    out.push(res);
  }
  return out;
}

/** Splits `vpcs.network.test.io` into resource and group; `vpc` has no group. */
export function splitQuery(query: string): { resource: string; group?: string } {
  const dot = query.indexOf(".");
  return dot < 0 ? { resource: query } : { resource: query.slice(0, dot), group: query.slice(dot + 1) };
}

export type Match = { ok: true; resource: ApiResource } | { ok: false; error: string };

export function matchResource(query: string, resources: readonly ApiResource[]): Match {
  const { resource, group } = splitQuery(query);
  const q = resource.toLowerCase();
  const found = resources.filter(
    (r) =>
      (group === undefined || r.group === group) &&
      (r.name === q ||
        r.singularName === q ||
        r.kind.toLowerCase() === q ||
        (r.shortNames ?? []).some((s) => s.toLowerCase() === q)),
  );
  // The same group/resource at several versions is one type.
  const types = new Map(found.map((r) => [`${r.name}.${r.group}`, r]));
  if (types.size === 1) return { ok: true, resource: [...types.values()][0]! };
  if (types.size === 0)
    return {
      ok: false,
      error: `the server doesn't have a resource type "${query}" in this workspace (is its APIExport bound here?)`,
    };
  const names = [...types.keys()].sort().join(", ");
  return { ok: false, error: `"${query}" is ambiguous here: ${names}; name one of them` };
}

/** `group/version` for a path: `/api/v1` for the core group. */
export const apiPrefix = (group: string, version: string): string =>
  group === "" ? `/api/${version}` : `/apis/${group}/${version}`;

export function collectionPath(r: { group: string; version: string; name: string }, namespace?: string): string {
  return `${apiPrefix(r.group, r.version)}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ""}/${r.name}`;
}
