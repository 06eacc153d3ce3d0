// The graphs the plugin draws: types (from rules) or objects (from one workspace), with the edges that lie on a cycle
// marked, and their renderings as Mermaid, Graphviz dot and JSON. Pure: the I/O that gathers rules and objects is in
// source.ts.
import type { GroupVersionResource, ParsedRule } from "../api/rule.ts";
import type { FieldPath } from "../fieldpath/fieldpath.ts";
import { stronglyConnected } from "../util/graph.ts";
import { printable, printableJson } from "../util/printable.ts";

export interface GraphNode {
  id: string;
  /** First line: what it is (`VirtualMachine`, `VirtualMachine default/vm-1`). */
  label: string;
  /** Second line: where it comes from (group and provider workspace, or group/resource). */
  detail?: string;
  onCycle: boolean;
  /** An object named by a reference that does not exist (object graph only). */
  missing?: boolean;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Field paths in the dependent that carry the reference. */
  fields: string[];
  /** Rules that draw this edge (`<workspace>:<name>`); empty in the object graph's unknown cases. */
  rules: string[];
  onCycle: boolean;
}

export interface Graph {
  kind: "types" | "objects";
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Each cycle's nodes (a strongly connected component with an edge inside), sorted. */
  cycles: string[][];
}

/** A rule as read from a workspace: the plugin knows the path it listed, the rule knows only its logical cluster. */
export interface RuleInWorkspace {
  workspace: string;
  rule: ParsedRule;
}

/**
 * One dependency of a rule as every command reads it: exported by the provider workspace `provider`, or a local
 * target (no `provider`: a core type of each consumer workspace itself, a dependency without apiExportRef).
 */
export interface RuleDependency {
  target: GroupVersionResource;
  fieldPath: FieldPath;
  provider?: string;
}

/** A rule's valid dependencies, exported and local, in the order the rule lists them. */
export function dependenciesOf(rule: ParsedRule): RuleDependency[] {
  const all = [
    ...rule.dependencies.map((d) => ({
      index: d.index,
      dep: { target: d.target, fieldPath: d.fieldPath, provider: d.path },
    })),
    ...rule.localDependencies.map((d) => ({ index: d.index, dep: { target: d.target, fieldPath: d.fieldPath } })),
  ];
  return all.sort((a, b) => a.index - b.index).map((d) => d.dep);
}

/** Where a local target's type lives in the type graph: each consumer workspace of the dependent, not one provider. */
export const LOCAL_WORKSPACE = "(each consumer workspace)";

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A type is (provider workspace, group, resource): two providers may serve the same group/resource. */
export const typeId = (workspace: string, group: string, resource: string): string =>
  `${workspace}|${resource}.${group}`;

/** Builds a graph from edges, merging duplicates, and marks cycles. */
export class GraphBuilder {
  private readonly nodes = new Map<string, GraphNode>();
  private readonly edges = new Map<string, GraphEdge>();

  node(id: string, label: string, detail?: string): GraphNode {
    let n = this.nodes.get(id);
    if (!n) {
      n = { id, label, ...(detail !== undefined ? { detail } : {}), onCycle: false };
      this.nodes.set(id, n);
    }
    return n;
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  edge(from: string, to: string, field: string, rule?: string): void {
    const key = `${from}\n${to}`;
    const e = this.edges.get(key) ?? { from, to, fields: [], rules: [], onCycle: false };
    if (!e.fields.includes(field)) e.fields.push(field);
    if (rule !== undefined && !e.rules.includes(rule)) e.rules.push(rule);
    this.edges.set(key, e);
  }

  build(kind: Graph["kind"]): Graph {
    const nodes = [...this.nodes.values()].sort((a, b) => cmp(a.id, b.id));
    const edges = [...this.edges.values()].sort((a, b) => cmp(a.from, b.from) || cmp(a.to, b.to));
    for (const e of edges) {
      e.fields.sort(cmp);
      e.rules.sort(cmp);
    }
    const cycles = markCycles(nodes, edges);
    return { kind, nodes, edges, cycles };
  }
}

/**
 * Marks every edge whose ends lie in one strongly connected component (a self-loop included) and the nodes on
 * them; returns the components that hold such an edge.
 */
export function markCycles(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): string[][] {
  const adj = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const e of edges) adj.get(e.from)?.push(e.to);
  const comp = stronglyConnected([...adj.keys()], adj);
  const cyclic = new Map<number, Set<string>>();
  for (const e of edges) {
    const c = comp.get(e.from);
    if (c === undefined || c !== comp.get(e.to)) continue;
    e.onCycle = true;
    const set = cyclic.get(c) ?? new Set<string>();
    set.add(e.from).add(e.to);
    cyclic.set(c, set);
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const cycles = [...cyclic.values()].map((s) => [...s].sort(cmp));
  for (const id of cycles.flat()) {
    const n = byId.get(id);
    if (n) n.onCycle = true;
  }
  return cycles.sort((a, b) => cmp(a[0] ?? "", b[0] ?? ""));
}

/** The type-level graph: one edge from each rule's dependent type to each of its dependencies' types. */
export function typeGraph(rules: readonly RuleInWorkspace[]): Graph {
  const g = new GraphBuilder();
  const kinds = new Map<string, string>();
  for (const { workspace, rule } of rules) {
    const d = rule.dependent;
    if (d) kinds.set(typeId(workspace, d.group, d.resource), d.kind);
  }
  const typeNode = (workspace: string, group: string, resource: string): string => {
    const id = typeId(workspace, group, resource);
    const kind = kinds.get(id);
    g.node(id, kind ?? resource, `${kind ? `${resource}.` : ""}${group || "core"}\n${workspace}`);
    return id;
  };
  for (const { workspace, rule } of rules) {
    const d = rule.dependent;
    if (!d) continue;
    const from = typeNode(workspace, d.group, d.resource);
    for (const dep of dependenciesOf(rule)) {
      const to = typeNode(dep.provider ?? LOCAL_WORKSPACE, dep.target.group, dep.target.resource);
      g.edge(from, to, dep.fieldPath.source, `${workspace}:${rule.key.name}`);
    }
  }
  return g.build("types");
}

// ---- renderings ----
// Labels hold what tenants wrote (kinds, field paths, object names): each piece is made printable before the format's
// own quoting. A node's text is its label, then its detail's lines, which the builders above join with "\n": the
// rule schema admits no line break in a group, resource or workspace path, so each "\n" in a detail is ours.

/** A node's lines, each printable; the renderer joins them with its own line break. */
const nodeLines = (n: GraphNode): string[] => [n.label, ...(n.detail?.split("\n") ?? [])].map(printable);
const edgeLines = (e: GraphEdge): string[] => (e.onCycle ? ["cycle", ...e.fields] : e.fields).map(printable);

const mermaidText = (s: string): string => s.replace(/"/g, "#quot;").replace(/\n/g, "<br/>");

export function toMermaid(graph: Graph): string {
  const ids = new Map(graph.nodes.map((n, i) => [n.id, `n${i}`]));
  const lines = ["flowchart LR"];
  for (const n of graph.nodes) {
    const text = mermaidText(nodeLines(n).join("\n"));
    lines.push(`  ${ids.get(n.id)!}["${text}"]`);
  }
  const cycleLinks: number[] = [];
  graph.edges.forEach((e, i) => {
    const label = mermaidText(edgeLines(e).join(", "));
    lines.push(`  ${ids.get(e.from)!} -->|"${label}"| ${ids.get(e.to)!}`);
    if (e.onCycle) cycleLinks.push(i);
  });
  const cyclic = graph.nodes.filter((n) => n.onCycle).map((n) => ids.get(n.id)!);
  const missing = graph.nodes.filter((n) => n.missing).map((n) => ids.get(n.id)!);
  if (cyclic.length > 0) {
    lines.push("  classDef cycle stroke:#d00,stroke-width:3px");
    lines.push(`  class ${cyclic.join(",")} cycle`);
    lines.push(`  linkStyle ${cycleLinks.join(",")} stroke:#d00,stroke-width:3px`);
  }
  if (missing.length > 0) {
    lines.push("  classDef missing stroke-dasharray:5 5,color:#a00");
    lines.push(`  class ${missing.join(",")} missing`);
  }
  return lines.join("\n") + "\n";
}

const dotString = (s: string): string => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

export function toDot(graph: Graph): string {
  const lines = [
    `digraph dependencies {`,
    `  rankdir=LR;`,
    `  node [shape=box, style=rounded, fontname="Helvetica"];`,
    `  edge [fontname="Helvetica", fontsize=10];`,
  ];
  for (const n of graph.nodes) {
    const attrs = [`label=${dotString(nodeLines(n).join("\n"))}`];
    if (n.onCycle) attrs.push(`color="#d00000"`, `penwidth=2`);
    if (n.missing) attrs.push(`style="rounded,dashed"`, `fontcolor="#a00000"`);
    lines.push(`  ${dotString(printable(n.id))} [${attrs.join(", ")}];`);
  }
  for (const e of graph.edges) {
    const attrs = [`label=${dotString(edgeLines(e).join("\n"))}`];
    if (e.onCycle) attrs.push(`color="#d00000"`, `fontcolor="#d00000"`, `penwidth=2`);
    lines.push(`  ${dotString(printable(e.from))} -> ${dotString(printable(e.to))} [${attrs.join(", ")}];`);
  }
  lines.push("}");
  return lines.join("\n") + "\n";
}

export function toJson(graph: Graph): string {
  return printableJson(graph) + "\n";
}
