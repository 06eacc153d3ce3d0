// `kubectl dependencies why`: a server-side dry-run DELETE asks kcp, with the user's own rights, whether the delete
// would go through now. The webhook decides a dry run exactly like a real delete and changes nothing.
import { UsageError, type GivenArgs } from "../../../cli/kit.ts";
import { namespaceFlag, read, type CommandFlag, type PluginCommand } from "../../contract.ts";
import { collectionPath, matchResource } from "../../discovery.ts";
import { readRules } from "../../rules.ts";
import { discover, dryRunDelete, explain, PluginError, withSession, type Connection } from "../../session.ts";
import { where, whyResult, type WhyTarget } from "./report.ts";

export interface WhyCommand {
  name: "why";
  /** What the user typed before the slash: `vpc`, `vpcs`, `VPC`, `vpcs.network.test.io`. */
  resource: string;
  objectName: string;
  namespace?: string;
  /** Provider workspaces whose rules to name next to the blockers (for those who may read them). */
  ruleWorkspaces: string[];
  connection: Connection;
}

const NAMESPACE = namespaceFlag("namespace of the object", 'the context\'s namespace, else "default"');
const RULE_WORKSPACE: CommandFlag = {
  name: "rule-workspace",
  type: "list",
  arg: "<path>",
  help: "also name the DependencyRule behind each blocker, read from this provider workspace (repeatable; only if you may read its rules: consumers usually may not)",
};

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
    connection,
  };
  return namespace ? { ...why, namespace } : why;
}

async function run(cmd: WhyCommand) {
  const r = await withSession(cmd.connection, async (s) => {
    const match = matchResource(cmd.resource, await discover(s, cmd.resource));
    if (!match.ok) throw new PluginError(`${match.error} (workspace ${s.workspace})`);
    const resource = match.resource;
    const namespace = resource.namespaced ? (cmd.namespace ?? s.namespace) : undefined;
    const t: WhyTarget = {
      resource,
      name: cmd.objectName,
      workspace: s.workspace,
      ...(namespace ? { namespace } : {}),
    };
    const path = `${collectionPath(resource, namespace)}/${encodeURIComponent(cmd.objectName)}`;
    try {
      const answer = await dryRunDelete(s, path);
      const rules = cmd.ruleWorkspaces.length > 0 ? (await readRules(s, cmd.ruleWorkspaces)).rules : undefined;
      return whyResult(t, answer, rules);
    } catch (err) {
      throw explain(err, `ask kcp about ${resource.name}/${cmd.objectName} in ${where(t)}`);
    }
  });
  // Exit code 2: the question could not be answered, said as an error line.
  return r.exitCode === 2 ? { exitCode: r.exitCode, text: "", error: r.text } : r;
}

export const why: PluginCommand<WhyCommand> = {
  name: "why",
  usage: "why <resource>/<name> [-n <namespace>]",
  brief: "why <resource>/<name> [-n <namespace>]",
  summary: "would deleting this object be refused now, and by what",
  prose: `Asks kcp, without deleting anything (a server-side dry-run DELETE), whether deleting the object would be refused
right now, by which webhook, and lists every object that blocks it (also past the ten the refusal message names),
with what to do next.

Exit code: 0 the object can be deleted now; 1 a delete would be refused; 2 the question could not be answered
(no such object or type, no permission, kcp not reachable, bad arguments).`,
  examples: ["kubectl dependencies why vpc/my-vpc -n default"],
  args: true,
  flags: [NAMESPACE, RULE_WORKSPACE],
  parse,
  run,
};
