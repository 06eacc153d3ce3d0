// `kubectl dependencies check`: the rules the user may read, and one workspace's objects of the types they name;
// dangling references and rules that are not Ready, as tables (report.ts).
import type { GivenArgs } from "../../../cli/kit.ts";
import { read, RULE_WORKSPACE, type PluginCommand } from "../../contract.ts";
import { findReferences } from "../../references.ts";
import { listRuleTypes, rulesWithNotes } from "../../rules.ts";
import { withSession, type Connection } from "../../session.ts";
import { checkReport, notReadyRules } from "./report.ts";

export interface CheckCommand {
  name: "check";
  ruleWorkspaces: string[];
  connection: Connection;
}

export const check: PluginCommand<CheckCommand> = {
  name: "check",
  usage: "check [--rule-workspace <path>]...",
  brief: "check",
  summary: "dangling references in a workspace, and rules that are not Ready",
  prose: `Lists, as tables, the dependents in one workspace (--workspace, default the kubeconfig's) that name a dependency
that does not exist (dangling references), and the DependencyRules whose Ready condition is not True. Needs read
access to the rules (see --rule-workspace) and to the objects of the workspace.

Exit code: 0 nothing found; 1 something found; 2 the check could not be made.`,
  examples: ["kubectl dependencies check --workspace root:consumer1"],
  flags: [RULE_WORKSPACE],
  parse: (given: GivenArgs, connection: Connection): CheckCommand => ({
    name: "check",
    ruleWorkspaces: read.list(given, RULE_WORKSPACE),
    connection,
  }),
  run: (cmd) =>
    withSession(cmd.connection, async (s) => {
      const { scan, notes } = await rulesWithNotes(s, cmd.ruleWorkspaces);
      if (scan.rules.length === 0) return { exitCode: 2, text: "", notes };
      const refs = findReferences(scan.rules, (await listRuleTypes(s, scan.rules)).listings);
      const notReady = notReadyRules(scan.objects);
      const found = refs.some((r) => r.state !== "exists") || notReady.length > 0;
      return { exitCode: found ? 1 : 0, text: checkReport(s.workspace, refs, notReady), notes };
    }),
};
