// Who references whom in one workspace, by the rules: the object graph and the dangling references come from here.
// Pure: the listings are gathered by source.ts. Matching is the webhook's (src/fieldpath): a name at the rule's field
// path, looked up in the dependent's own namespace when the dependency type is namespaced.
import { referencedNames } from "../fieldpath/fieldpath.ts";
import { isRecord } from "../util/json.ts";
import { GraphBuilder, type Graph, type RuleInWorkspace } from "./graph.ts";

/** One type's objects in the workspace, as listed there. */
export interface TypeListing {
  group: string;
  resource: string;
  kind?: string;
  namespaced?: boolean;
  /** Undefined when the workspace does not serve the type (not bound there). */
  items?: readonly unknown[];
}

export interface ObjectKey {
  group: string;
  resource: string;
  kind: string;
  namespace?: string;
  name: string;
}

export type ReferenceState = "exists" | "missing" | "type-not-served";

export interface Reference {
  from: ObjectKey;
  to: ObjectKey;
  field: string;
  /** `<workspace>:<rule name>` */
  rule: string;
  state: ReferenceState;
}

export const listingKey = (group: string, resource: string): string => `${resource}.${group}`;

function metaOf(item: unknown): { name?: string; namespace?: string } {
  const meta = isRecord(item) && isRecord(item["metadata"]) ? item["metadata"] : {};
  const name = typeof meta["name"] === "string" && meta["name"] !== "" ? meta["name"] : undefined;
  const ns = typeof meta["namespace"] === "string" && meta["namespace"] !== "" ? meta["namespace"] : undefined;
  return { ...(name ? { name } : {}), ...(ns ? { namespace: ns } : {}) };
}

/** Every reference the rules see in the listings, sorted by dependent, field, then target. */
export function findReferences(
  rules: readonly RuleInWorkspace[],
  listings: ReadonlyMap<string, TypeListing>,
): Reference[] {
  const names = new Map<string, Set<string>>();
  const existing = (l: TypeListing): Set<string> => {
    const key = listingKey(l.group, l.resource);
    let set = names.get(key);
    if (!set) {
      set = new Set((l.items ?? []).map(metaOf).map((m) => `${m.namespace ?? ""}/${m.name ?? ""}`));
      names.set(key, set);
    }
    return set;
  };
  const out: Reference[] = [];
  for (const { workspace, rule } of rules) {
    const d = rule.dependent;
    const dependents = d ? listings.get(listingKey(d.group, d.resource)) : undefined;
    if (!d || !dependents?.items) continue;
    for (const item of dependents.items) {
      const meta = metaOf(item);
      if (!meta.name) continue;
      const from: ObjectKey = { group: d.group, resource: d.resource, kind: d.kind, name: meta.name };
      if (meta.namespace) from.namespace = meta.namespace;
      for (const dep of rule.dependencies) {
        const target = listings.get(listingKey(dep.target.group, dep.target.resource));
        for (const name of referencedNames(item, dep.fieldPath)) {
          const to: ObjectKey = {
            group: dep.target.group,
            resource: dep.target.resource,
            kind: target?.kind ?? dep.target.resource,
            name,
          };
          // As the webhook decides: a namespaced dependency is looked for in the dependent's namespace.
          if (target?.namespaced !== false && meta.namespace) to.namespace = meta.namespace;
          const state: ReferenceState = !target?.items
            ? "type-not-served"
            : existing(target).has(`${to.namespace ?? ""}/${name}`)
              ? "exists"
              : "missing";
          // An object never blocks its own deletion; it is no reference either.
          if (to.group === from.group && to.resource === from.resource && to.name === from.name) continue;
          out.push({ from, to, field: dep.fieldPath.source, rule: `${workspace}:${rule.key.name}`, state });
        }
      }
    }
  }
  const k = (o: ObjectKey): string => `${o.kind}/${o.namespace ?? ""}/${o.name}`;
  return out.sort((a, b) => cmpStr(k(a.from), k(b.from)) || cmpStr(a.field, b.field) || cmpStr(k(a.to), k(b.to)));
}

const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const objectId = (o: ObjectKey): string => `${listingKey(o.group, o.resource)}|${o.namespace ?? ""}|${o.name}`;
const objectLabel = (o: ObjectKey): string => `${o.kind} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`;

/** The object graph: one node per object that references or is referenced, missing targets marked. */
export function objectGraph(refs: readonly Reference[]): Graph {
  const g = new GraphBuilder();
  for (const r of refs) {
    const from = objectId(r.from);
    const to = objectId(r.to);
    g.node(from, objectLabel(r.from));
    const n = g.node(to, objectLabel(r.to));
    if (r.state !== "exists") n.missing = true;
    g.edge(from, to, r.field, r.rule);
  }
  // A node first seen as a missing target may turn up as an existing dependent.
  const graph = g.build("objects");
  const present = new Set(refs.filter((r) => r.state === "exists").map((r) => objectId(r.to)));
  for (const r of refs) present.add(objectId(r.from));
  for (const n of graph.nodes) if (n.missing && present.has(n.id)) delete n.missing;
  return graph;
}
