// Cycle detection over all rules. Each rule draws edges from its dependent's group/resource to each dependency's;
// a cycle (virtualmachines → vpcs → virtualmachines) means objects may end up protecting each other so that neither
// can be deleted without the skip-protection annotation. Cycles are reported, not broken: dropping protection would
// let any provider switch off another's by writing a counter-rule.
import { type GroupResource, groupResourceString, type RuleKey, ruleKeyString } from "../api/types.ts";
import { stronglyConnected } from "../util/graph.ts";

export interface RuleEdges {
  key: RuleKey;
  dependent: GroupResource;
  dependencies: readonly GroupResource[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Shortest path from `from` to `to` inside one component (BFS over sorted neighbours: deterministic). */
function shortestPath(
  from: string,
  to: string,
  adj: ReadonlyMap<string, readonly string[]>,
  inComponent: (n: string) => boolean,
): string[] {
  const prev = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift()!;
    if (v === to) break;
    for (const w of adj.get(v) ?? []) {
      if (prev.has(w) || !inComponent(w)) continue;
      prev.set(w, v);
      queue.push(w);
    }
  }
  const path = [to];
  while (path[0] !== from) path.unshift(prev.get(path[0]!)!);
  return path;
}

/**
 * For every rule that has an edge on a cycle: a one-line, deterministic message naming one such cycle (started at
 * its alphabetically first resource) and the rules that draw its edges.
 */
export function findCycles(rules: readonly RuleEdges[]): Map<string, string> {
  const edgeRules = new Map<string, Set<string>>(); // "u\0v" → rule keys
  const adjSets = new Map<string, Set<string>>();
  for (const rule of rules) {
    const u = groupResourceString(rule.dependent);
    if (!adjSets.has(u)) adjSets.set(u, new Set());
    for (const dep of rule.dependencies) {
      const v = groupResourceString(dep);
      adjSets.get(u)!.add(v);
      if (!adjSets.has(v)) adjSets.set(v, new Set());
      const e = `${u}\0${v}`;
      if (!edgeRules.has(e)) edgeRules.set(e, new Set());
      edgeRules.get(e)!.add(ruleKeyString(rule.key));
    }
  }
  const adj = new Map<string, string[]>();
  for (const [v, ws] of adjSets) adj.set(v, [...ws].sort(cmp));
  const comp = stronglyConnected([...adj.keys()].sort(cmp), adj);

  const result = new Map<string, string>();
  for (const rule of rules) {
    const u = groupResourceString(rule.dependent);
    const cycles: string[][] = [];
    for (const v of [...new Set(rule.dependencies.map(groupResourceString))].sort(cmp)) {
      if (comp.get(u) !== comp.get(v)) continue;
      const back = u === v ? [v] : shortestPath(v, u, adj, (n) => comp.get(n) === comp.get(u));
      cycles.push([u, ...back]); // u → v → … → u
    }
    if (cycles.length === 0) continue;
    const canonical = cycles.map(rotateToSmallest).sort((a, b) => a.length - b.length || cmp(a.join(" "), b.join(" ")));
    const cycle = canonical[0]!;
    const by = new Set<string>();
    for (let i = 0; i + 1 < cycle.length; i++)
      for (const k of edgeRules.get(`${cycle[i]}\0${cycle[i + 1]}`) ?? []) by.add(k);
    result.set(
      ruleKeyString(rule.key),
      `dependency cycle ${cycle.join(" → ")} (${drawnBy(rule.key.cluster, by)}): objects on it can block each ` +
        `other's deletion; break the cycle or use the skip-protection annotation`,
    );
  }
  return result;
}

/**
 * The rules drawing a cycle, as the author of a rule in `cluster` may read them: the rules of its own workspace by
 * name, the others only counted (their workspaces and names are other tenants' business; the types are on the cycle).
 */
function drawnBy(cluster: string, keys: ReadonlySet<string>): string {
  const own = [...keys].filter((k) => k.startsWith(`${cluster}/`)).map((k) => k.slice(cluster.length + 1));
  const others = keys.size - own.length;
  const parts =
    own.length > 0 ? [`rule${own.length === 1 ? "" : "s"} ${own.sort(cmp).join(", ")} of this workspace`] : [];
  if (others > 0) parts.push(`${others} rule${others === 1 ? "" : "s"} in other workspaces`);
  return parts.join(" and ");
}

/** [b, c, a, b] → [a, b, c, a]: the same cycle always reads the same way. */
function rotateToSmallest(cycle: string[]): string[] {
  const nodes = cycle.slice(0, -1);
  let start = 0;
  for (let i = 1; i < nodes.length; i++) if (cmp(nodes[i]!, nodes[start]!) < 0) start = i;
  const rotated = [...nodes.slice(start), ...nodes.slice(0, start)];
  return [...rotated, rotated[0]!];
}
