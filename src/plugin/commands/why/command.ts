// `kubectl dependencies why`: a server-side dry-run DELETE asks kcp, with the user's own rights, whether the delete
// would go through now. The webhook decides a dry run exactly like a real delete and changes nothing. The object is
// read too: one that is already being deleted (a deletionTimestamp) is explained by what holds it (terminating.ts).
import { UsageError, type GivenArgs } from "../../../cli/kit.ts";
import { realClock } from "../../../util/clock.ts";
import {
  namespaceFlag,
  outputFlag,
  read,
  type CommandFlag,
  type CommandResult,
  type PluginCommand,
  type RunContext,
} from "../../contract.ts";
import { collectionPath, matchResource, splitQuery, type ApiResource } from "../../discovery.ts";
import { readRules } from "../../rules.ts";
import {
  discover,
  dryRunDelete,
  explain,
  PluginError,
  withSession,
  type Connection,
  type Session,
} from "../../session.ts";
import { readHolders, readObject } from "./read.ts";
import { where, whyReport, whyResult, type WhyFormat, type WhyTarget } from "./report.ts";
import { terminatingOf } from "./terminating.ts";

export interface WhyCommand {
  name: "why";
  /** What the user typed before the slash: `vpc`, `vpcs`, `VPC`, `vpcs.network.test.io`. */
  resource: string;
  objectName: string;
  namespace?: string;
  /** Provider workspaces whose rules to name next to the blockers (for those who may read them). */
  ruleWorkspaces: string[];
  format: WhyFormat;
  connection: Connection;
}

const NAMESPACE = namespaceFlag("namespace of the object", 'the context\'s namespace, else "default"');
const RULE_WORKSPACE: CommandFlag = {
  name: "rule-workspace",
  type: "list",
  arg: "<path>",
  help: "also name the DependencyRule behind each blocker, read from this provider workspace (repeatable; only if you may read its rules: consumers usually may not)",
};
const OUTPUT = outputFlag(["text", "json"], "text or json (the same facts, and the exit code)");

/** `vpc/my-vpc`, or `vpc my-vpc` as kubectl also takes it. */
function parseTarget(positional: readonly string[]): { resource: string; name: string } {
  const usage = "why needs one object: <resource>/<name> (e.g. vpc/my-vpc) or <resource> <name>";
  if (positional.length === 1) {
    const [resource, name, ...rest] = positional[0]!.split("/");
    if (!resource || !name || rest.length > 0) throw new UsageError(usage);
    return { resource, name };
  }
  if (positional.length === 2 && !positional[0]!.includes("/") && !positional[1]!.includes("/"))
    return { resource: positional[0]!, name: positional[1]! };
  throw new UsageError(usage);
}

function parse(given: GivenArgs, connection: Connection): WhyCommand {
  const target = parseTarget(given.positionals);
  const namespace = read.text(given, NAMESPACE);
  const why: WhyCommand = {
    name: "why",
    resource: target.resource,
    objectName: target.name,
    ruleWorkspaces: read.list(given, RULE_WORKSPACE),
    format: read.format<WhyFormat>(given, OUTPUT),
    connection,
  };
  return namespace ? { ...why, namespace } : why;
}

/** The object the user named, resolved by discovery; `all` answers every type of the workspace, read once. */
async function targetOf(s: Session, cmd: WhyCommand): Promise<{ t: WhyTarget; all: () => Promise<ApiResource[]> }> {
  const found = await discover(s, cmd.resource);
  const match = matchResource(cmd.resource, found);
  if (!match.ok) throw new PluginError(`${match.error} (workspace ${s.workspace})`);
  const resource = match.resource;
  const namespace = resource.namespaced ? (cmd.namespace ?? s.namespace) : undefined;
  // Without a group in the query, discovery read every group already.
  let every: Promise<ApiResource[]> | undefined =
    splitQuery(cmd.resource).group === undefined ? Promise.resolve(found) : undefined;
  const all = (): Promise<ApiResource[]> => (every ??= discover(s, ""));
  return { t: { resource, name: cmd.objectName, workspace: s.workspace, ...(namespace ? { namespace } : {}) }, all };
}

async function run(cmd: WhyCommand, ctx: RunContext): Promise<CommandResult> {
  const clock = ctx.clock ?? realClock;
  const r = await withSession(cmd.connection, async (s): Promise<CommandResult> => {
    const { t, all } = await targetOf(s, cmd);
    const path = `${collectionPath(t.resource, t.namespace)}/${encodeURIComponent(cmd.objectName)}`;
    const notes: string[] = [];
    try {
      const state = await readObject(s, path, notes);
      if (state === "gone") return whyResult(t, { outcome: "gone" });
      const answer = await dryRunDelete(s, path);
      const rules = cmd.ruleWorkspaces.length > 0 ? (await readRules(s, cmd.ruleWorkspaces)).rules : undefined;
      const holders = state?.deletionTimestamp ? await readHolders(s, t, state, all, notes) : {};
      const terminating = state && terminatingOf(state, clock.now(), holders);
      const report = whyReport(
        { target: t, answer, ...(rules ? { rules } : {}), ...(terminating ? { terminating } : {}) },
        cmd.format,
      );
      const allNotes = [...notes, ...(report.notes ?? [])];
      return { exitCode: report.exitCode, text: report.text, ...(allNotes.length > 0 ? { notes: allNotes } : {}) };
    } catch (err) {
      throw explain(err, `ask kcp about ${t.resource.name}/${cmd.objectName} in ${where(t)}`);
    }
  });
  // Exit code 2: the question could not be answered, said as an error line.
  return r.exitCode === 2
    ? { exitCode: r.exitCode, text: "", error: r.text, ...(r.notes ? { notes: r.notes } : {}) }
    : r;
}

export const why: PluginCommand<WhyCommand> = {
  name: "why",
  usage: "why <resource>/<name> [-n <namespace>] [-o text|json]",
  brief: "why <resource>/<name> [-n <namespace>]",
  summary: "would a delete be refused now, and by what; or what keeps it Terminating",
  prose: `Asks kcp, without deleting anything (a server-side dry-run DELETE), whether deleting the object would be refused
right now, by which webhook, and lists every object that blocks it (also past the ten the refusal message names),
with what to do next.

An object that is already being deleted (Terminating: it has a deletionTimestamp) is explained by what holds it:
since when, each finalizer and who usually removes it (api-syncagent, kcp, Kubernetes, or unknown), its conditions
and owner references; with foregroundDeletion the dependents left; for a namespace the objects still in it, by type;
for a workspace its LogicalCluster. Whatever you may not read is named on stderr.

Exit code: 0 the object can be deleted now; 1 a delete would be refused, or the object is being deleted and still
there; 2 the question could not be answered (no such object or type, no permission, kcp not reachable, bad
arguments). -o json prints the same facts and the exit code; with exit code 2 only the error line on stderr.`,
  examples: ["kubectl dependencies why vpc/my-vpc -n default", "kubectl dependencies why namespace/team-a -o json"],
  args: true,
  flags: [NAMESPACE, RULE_WORKSPACE, OUTPUT],
  parse,
  run,
};
