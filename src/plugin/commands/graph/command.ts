// `kubectl dependencies graph`: the type graph of the rules the user may read, or one workspace's objects by those
// rules, drawn with the pure parts (graph.ts, references.ts) as Mermaid, Graphviz dot or JSON.
import type { GivenArgs } from "../../../cli/kit.ts";
import { outputFlag, read, RULE_WORKSPACE, type CommandFlag, type PluginCommand } from "../../contract.ts";
import { toDot, toJson, toMermaid, typeGraph } from "../../graph.ts";
import { findReferences, objectGraph } from "../../references.ts";
import { listRuleTypes, rulesWithNotes } from "../../rules.ts";
import { withSession, type Connection } from "../../session.ts";

export type OutputFormat = "mermaid" | "dot" | "json";

export interface GraphCommand {
  name: "graph";
  format: OutputFormat;
  /** Objects of one consumer workspace instead of the type-level graph of the rules. */
  objects: boolean;
  /** Workspaces to read rules from; empty: every readable workspace below `root`. */
  ruleWorkspaces: string[];
  connection: Connection;
}

const OUTPUT = outputFlag(["mermaid", "dot", "json"], "mermaid, dot (Graphviz) or json");
const OBJECTS: CommandFlag = {
  name: "objects",
  type: "switch",
  boolean: true,
  help: "the object graph of --workspace instead of the type graph",
};

function parse(given: GivenArgs, connection: Connection): GraphCommand {
  return {
    name: "graph",
    format: read.format<OutputFormat>(given, OUTPUT),
    objects: read.switch(given, OBJECTS),
    ruleWorkspaces: read.list(given, RULE_WORKSPACE),
    connection,
  };
}

export const graph: PluginCommand<GraphCommand> = {
  name: "graph",
  usage: "graph [-o mermaid|dot|json] [--rule-workspace <path>]... [--objects]",
  brief: "graph [-o mermaid|dot|json] [--objects]",
  summary: "the graph of the rules (or of one workspace's objects)",
  prose: `Without --objects: the type-level graph of every DependencyRule you may read, an edge from each dependent type to
each type it depends on, labelled with the field path. With --objects: the objects of one workspace (--workspace,
default the kubeconfig's) as a graph of who references whom, by those rules. Edges on a cycle are marked.`,
  examples: [
    "kubectl dependencies graph -o dot | dot -Tpng > rules.png",
    "kubectl dependencies graph --objects --workspace root:consumer1",
  ],
  flags: [OUTPUT, RULE_WORKSPACE, OBJECTS],
  parse,
  run: (cmd) =>
    withSession(cmd.connection, async (s) => {
      const { scan, notes } = await rulesWithNotes(s, cmd.ruleWorkspaces);
      const g = cmd.objects
        ? objectGraph(findReferences(scan.rules, (await listRuleTypes(s, scan.rules)).listings))
        : typeGraph(scan.rules);
      if (g.cycles.length > 0) notes.push(`${g.cycles.length} cycle(s) found, marked in the graph`);
      const render = { mermaid: toMermaid, dot: toDot, json: toJson }[cmd.format];
      return { exitCode: 0, text: render(g), notes };
    }),
};
