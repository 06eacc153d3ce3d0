// `kubectl dependencies graph` and `check`: read the rules the user may read, and for one workspace its objects of
// the types those rules name; then draw or check them with the pure parts (graph.ts, references.ts).
import type { CheckCommand, GraphCommand } from "./args.ts";
import { toDot, toJson, toMermaid, typeGraph } from "./graph.ts";
import { findReferences, objectGraph, type Reference } from "./references.ts";
import { isRecord } from "../util/json.ts";
import { listRuleTypes, rulesWithNotes, type RuleScan } from "./rules.ts";
import { withSession } from "./session.ts";
import { renderTable } from "./table.ts";

export interface CommandResult {
  exitCode: 0 | 1 | 2;
  /** What goes to stdout. */
  text: string;
  /** Notes for stderr: what could not be read. */
  notes: string[];
}

export async function runGraph(cmd: GraphCommand): Promise<CommandResult> {
  return withSession(cmd.connection, async (s) => {
    const { scan, notes } = await rulesWithNotes(s, cmd.ruleWorkspaces);
    const graph = cmd.objects
      ? objectGraph(findReferences(scan.rules, (await listRuleTypes(s, scan.rules)).listings))
      : typeGraph(scan.rules);
    if (graph.cycles.length > 0) notes.push(`${graph.cycles.length} cycle(s) found, marked in the graph`);
    const render = { mermaid: toMermaid, dot: toDot, json: toJson }[cmd.format];
    return { exitCode: 0, text: render(graph), notes };
  });
}

export interface NotReadyRule {
  workspace: string;
  name: string;
  status: string;
  reason: string;
  message: string;
}

/** Rules whose Ready condition is missing or not True, and rules the rule model finds problems in. Pure. */
export function notReadyRules(objects: RuleScan["objects"]): NotReadyRule[] {
  const out: NotReadyRule[] = [];
  for (const { workspace, object } of objects) {
    const meta = isRecord(object["metadata"]) ? object["metadata"] : {};
    const name = typeof meta["name"] === "string" ? meta["name"] : "?";
    const status = isRecord(object["status"]) ? object["status"] : {};
    const conditions = Array.isArray(status["conditions"]) ? (status["conditions"] as unknown[]) : [];
    const ready = conditions.find((c) => isRecord(c) && c["type"] === "Ready") as Record<string, unknown> | undefined;
    if (ready?.["status"] === "True") continue;
    out.push({
      workspace,
      name,
      status: typeof ready?.["status"] === "string" ? ready["status"] : "Unknown",
      reason: typeof ready?.["reason"] === "string" ? ready["reason"] : "NoStatus",
      message: typeof ready?.["message"] === "string" ? ready["message"] : "the controller has not written a status",
    });
  }
  return out;
}

/** The check's report: dangling references and rules that are not Ready, as tables. Pure. */
export function checkReport(workspace: string, refs: readonly Reference[], notReady: readonly NotReadyRule[]): string {
  const dangling = refs.filter((r) => r.state !== "exists");
  const danglingPart =
    dangling.length === 0
      ? `no dangling references in ${workspace}\n`
      : `dangling references in ${workspace} (the dependent names something that does not exist):\n\n` +
        renderTable(
          ["namespace", "dependent", "field", "missing", "rule"],
          dangling.map((r) => [
            r.from.namespace ?? "",
            `${r.from.kind}/${r.from.name}`,
            r.field,
            `${r.to.resource}/${r.to.name}${r.state === "type-not-served" ? " (type not bound here)" : ""}`,
            r.rule,
          ]),
        );
  const rulesPart =
    notReady.length === 0
      ? "every DependencyRule read is Ready\n"
      : "DependencyRules that are not Ready:\n\n" +
        renderTable(
          ["workspace", "rule", "ready", "reason", "message"],
          notReady.map((r) => [r.workspace, r.name, r.status, r.reason, r.message]),
        );
  return `${danglingPart}\n${rulesPart}`;
}

export async function runCheck(cmd: CheckCommand): Promise<CommandResult> {
  return withSession(cmd.connection, async (s) => {
    const { scan, notes } = await rulesWithNotes(s, cmd.ruleWorkspaces);
    if (scan.rules.length === 0) return { exitCode: 2, text: "", notes };
    const refs = findReferences(scan.rules, (await listRuleTypes(s, scan.rules)).listings);
    const notReady = notReadyRules(scan.objects);
    const found = refs.some((r) => r.state !== "exists") || notReady.length > 0;
    return { exitCode: found ? 1 : 0, text: checkReport(s.workspace, refs, notReady), notes };
  });
}
