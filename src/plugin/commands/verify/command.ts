// `kubectl dependencies verify`: does protection refuse exactly what the rules say, in one workspace. The contract
// here; the I/O in run.ts, the comparison in compare.ts, the report in render.ts.
import type { GivenArgs } from "../../../cli/kit.ts";
import { outputFlag, read, RULE_WORKSPACE, type PluginCommand } from "../../contract.ts";
import type { Connection } from "../../session.ts";
import { runVerify, type VerifyFormat, type VerifyCommand } from "./run.ts";

export type { VerifyFormat, VerifyCommand } from "./run.ts";

const OUTPUT = outputFlag(["text", "json"], "text or json");

function parse(given: GivenArgs, connection: Connection): VerifyCommand {
  const format = read.format<VerifyFormat>(given, OUTPUT);
  return { name: "verify", format, ruleWorkspaces: read.list(given, RULE_WORKSPACE), connection };
}

export const verify: PluginCommand<VerifyCommand> = {
  name: "verify",
  usage: "verify [-o text|json] [--rule-workspace <path>]...",
  brief: "verify [-o text|json]",
  summary: "does protection refuse exactly what the rules say, in a workspace",
  prose: `For operators, as a periodic job: in one workspace (--workspace, default the kubeconfig's), dry-run DELETEs every
object of every type the DependencyRules depend on (a server-side dry run: nothing is deleted) and compares kcp's
answer with the rules. An object the rules say is referenced must be refused, naming exactly its dependents; every
refusal must be explained by a rule. Lists the mismatches: protection that silently does nothing (unprotected), a
blocker no rule explains (stale-blockers), an expected blocker not named (missing-blockers). What a first pass finds
is checked again two seconds later; only what persists is reported. Needs read access to the rules and to the
workspace's objects, and the right to delete them (dry runs are authorized as deletes).

Exit code: 0 everything matches; 1 a mismatch; 2 the check could not be made, or an object could not be verified
(for example the webhook answered 503).`,
  examples: ["kubectl dependencies verify --workspace root:consumer1 -o json"],
  flags: [OUTPUT, RULE_WORKSPACE],
  parse,
  run: (cmd, ctx) => runVerify(cmd, ctx.clock ? { clock: ctx.clock } : {}),
};
