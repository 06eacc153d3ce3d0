// Who references whom in one workspace, by the rules: the object graph and the dangling references come from here.
// Pure: the listings are gathered by source.ts. Whether an object is a dependent of a target is the webhook's own
// decision (src/webhook/deletion/matching.ts), over the objects the webhook would list for that target: the target's
// namespace (and cluster-scoped dependents) for a namespaced target, everything for a cluster-scoped one.
import { referencedNames } from "../fieldpath/fieldpath.ts";
import { isRecord } from "../util/json.ts";
import { matchingDependents, type MatchKey } from "../webhook/deletion/matching.ts";
import { dependenciesOf, GraphBuilder, type Graph, type RuleDependency, type RuleInWorkspace } from "./graph.ts";
import { objectId, type ObjectRef } from "./objects.ts";

/** One type's objects in the workspace, as listed there. */
export interface TypeListing {
  group: string;
  resource: string;
  kind?: string;
  namespaced?: boolean;
  /** Undefined when the workspace does not serve the type (not bound there). */
  items?: readonly unknown[];
}

export type ReferenceState = "exists" | "missing" | "type-not-served";

export interface Reference {
  from: ObjectRef;
  to: ObjectRef;
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

/** The part of the webhook's Lookup that matching reads; where to list is the plugin's own business. */
type Match = MatchKey;
const dependentsOf = (items: readonly unknown[], m: Match) => matchingDependents(items, m);

// Typed through RuleInWorkspace, so this file follows the rule model wherever its types are declared.
type Rule = RuleInWorkspace["rule"];

/** The references of one rule dependency: for every object its dependents name, the dependents the webhook sees. */
function referencesOf(
  d: NonNullable<Rule["dependent"]>,
  items: readonly unknown[],
  dep: RuleDependency,
  target: TypeListing | undefined,
  rule: string,
): Reference[] {
  const namespaced = target?.namespaced !== false;
  const sameType = d.group === dep.target.group && d.resource === dep.target.resource;
  const present = new Set((target?.items ?? []).map(metaOf).map((m) => `${m.namespace ?? ""}/${m.name ?? ""}`));
  const inNamespaces = new Map<string, string[]>(); // name -> namespaces it exists in, for cluster-scoped dependents
  for (const m of (target?.items ?? []).map(metaOf))
    if (m.name && m.namespace) inNamespaces.set(m.name, [...(inNamespaces.get(m.name) ?? []), m.namespace]);
  // Every target some dependent names, and the dependents that name it (each checked by the webhook's matching).
  const named = new Map<string, { to: { namespace?: string; name: string }; items: unknown[] }>();
  for (const item of items) {
    const meta = metaOf(item);
    if (!meta.name) continue;
    for (const name of referencedNames(item, dep.fieldPath)) {
      // A cluster-scoped dependent is listed for a namespaced target in every namespace.
      const spaces = !namespaced
        ? [undefined]
        : meta.namespace
          ? [meta.namespace]
          : (inNamespaces.get(name) ?? [undefined]);
      for (const namespace of spaces) {
        const key = `${namespace ?? ""}/${name}`;
        const entry = named.get(key) ?? { to: namespace ? { namespace, name } : { name }, items: [] };
        if (entry.items.at(-1) !== item) entry.items.push(item);
        named.set(key, entry);
      }
    }
  }
  const out: Reference[] = [];
  const kind = target?.kind ?? dep.target.resource;
  for (const [key, { to, items: naming }] of named) {
    const state: ReferenceState = !target?.items ? "type-not-served" : present.has(key) ? "exists" : "missing";
    // As the webhook decides: an object never blocks its own deletion.
    const match: Match = { name: to.name, fieldPaths: [dep.fieldPath], ...(sameType ? { self: to } : {}) };
    for (const found of dependentsOf(naming, match)) {
      const from: ObjectRef = { group: d.group, resource: d.resource, kind: d.kind, name: found.name };
      if (found.namespace) from.namespace = found.namespace;
      const toKey: ObjectRef = { group: dep.target.group, resource: dep.target.resource, kind, ...to };
      out.push({ from, to: toKey, field: found.field, rule, state });
    }
  }
  return out;
}

/** Every reference the rules see in the listings, sorted by dependent, field, then target. */
export function findReferences(
  rules: readonly RuleInWorkspace[],
  listings: ReadonlyMap<string, TypeListing>,
): Reference[] {
  const out: Reference[] = [];
  for (const { workspace, rule } of rules) {
    const d = rule.dependent;
    const dependents = d ? listings.get(listingKey(d.group, d.resource)) : undefined;
    if (!d || !dependents?.items) continue;
    for (const dep of dependenciesOf(rule)) {
      const target = listings.get(listingKey(dep.target.group, dep.target.resource));
      out.push(...referencesOf(d, dependents.items, dep, target, `${workspace}:${rule.key.name}`));
    }
  }
  const k = (o: ObjectRef): string => `${o.kind}/${o.namespace ?? ""}/${o.name}`;
  return out.sort((a, b) => cmpStr(k(a.from), k(b.from)) || cmpStr(a.field, b.field) || cmpStr(k(a.to), k(b.to)));
}

const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const objectLabel = (o: ObjectRef): string => `${o.kind} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`;

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
