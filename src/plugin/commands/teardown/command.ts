// `kubectl dependencies teardown`: its flags, what its help says, and its command line. The run is in run.ts (the
// loop in execute.ts, the plan in plan.ts and survey.ts, kcp in kcp-api.ts, the report in render.ts).
import { UsageError, type GivenArgs } from "../../../cli/kit.ts";
import {
  namespaceFlag,
  outputFlag,
  read,
  RULE_WORKSPACE,
  type CommandFlag,
  type CommandResult,
  type PluginCommand,
  type RunContext,
} from "../../contract.ts";
import { printable } from "../../../util/printable.ts";
import type { Connection } from "../../session.ts";
import { runTeardown, type PlanFormat, type TeardownCommand } from "./run.ts";

export type { PlanFormat, TeardownCommand } from "./run.ts";

const NAMESPACE = namespaceFlag("the namespace to empty");
const PLAN: CommandFlag = { name: "plan", type: "switch", boolean: true, help: "print the plan, delete nothing" };
const YES: CommandFlag = {
  name: "yes",
  type: "switch",
  boolean: true,
  help: "take the whole workspace down (--workspace without -n) without asking",
};
const OUTPUT = outputFlag(["table", "json"], "the plan (--plan) or the final report: table or json");
const TIMEOUT: CommandFlag = {
  name: "timeout",
  type: "duration",
  arg: "<duration>",
  default: "10m",
  help: "give up after this long",
};
const CONCURRENCY: CommandFlag = {
  name: "concurrency",
  type: "count",
  arg: "<n>",
  default: "32",
  min: 1,
  max: 64,
  help: "dry runs, deletes and reads at a time",
};
const SKIP_PROTECTION: CommandFlag = {
  name: "skip-protection",
  type: "list",
  arg: "<resource>/<name>",
  help: "allow skip-protection for this object, to break a cycle: when nothing else can move, the plugin sets the annotation and deletes it (repeatable); in a whole-workspace teardown a namespaced object is <resource>/<namespace>/<name>",
};

function parse(given: GivenArgs, connection: Connection): TeardownCommand {
  const namespace = read.text(given, NAMESPACE);
  if (!namespace && !connection.workspace)
    throw new UsageError("say what to take down: -n <namespace>, or --workspace <path> for the whole workspace");
  const plan = read.switch(given, PLAN);
  const ruleWorkspaces = read.list(given, RULE_WORKSPACE);
  // The run itself reads no rules (it sends no dry run): the flag would silently do nothing there.
  if (ruleWorkspaces.length > 0 && !plan)
    throw new UsageError("--rule-workspace is for --plan: the run itself reads no rules (it sends no dry run)");
  const format = read.format<PlanFormat>(given, OUTPUT);
  const concurrency = read.count(given, CONCURRENCY);
  return {
    name: "teardown",
    plan,
    format,
    timeoutMs: read.duration(given, TIMEOUT),
    concurrency,
    skipProtection: read.list(given, SKIP_PROTECTION),
    yes: read.switch(given, YES),
    ruleWorkspaces,
    connection,
    ...(namespace ? { namespace } : {}),
  };
}

/**
 * A whole-workspace run (--workspace without -n) asks first, as `kubectl delete --all` users expect: the same flag
 * only chooses the workspace in every other command. --yes answers for the user; with no one to ask, nothing is
 * deleted and the result says why. Undefined: go on.
 */
async function confirmed(cmd: TeardownCommand, ctx: RunContext): Promise<CommandResult | undefined> {
  if (cmd.namespace !== undefined || cmd.plan || cmd.yes) return undefined;
  const what = `every object of the bound types, and every Secret and ConfigMap, in workspace ${printable(cmd.connection.workspace ?? "")}, in every namespace`;
  if (!ctx.ask)
    return {
      exitCode: 2,
      text: "",
      error: `nothing deleted: --workspace without -n takes down ${what}; confirm with --yes (no terminal to ask on)\n`,
    };
  const answer = await ctx.ask(`This deletes ${what}. Type "yes" to go on: `);
  if (answer.trim().toLowerCase() === "yes") return undefined;
  return { exitCode: 2, text: "", error: "nothing deleted: not confirmed\n" };
}

export const teardown: PluginCommand<TeardownCommand> = {
  name: "teardown",
  usage: "teardown (-n <namespace> | --workspace <path> [--yes]) [--plan [--rule-workspace <path>]...] [-o table|json]",
  brief: "teardown -n <ns> | --workspace <path>",
  summary: "delete everything there in dependency order (--plan: only show it)",
  prose: `Deletes every object of the workspace's bound types (APIBindings), and its Secrets and ConfigMaps, in one namespace
(-n), or in the whole workspace (--workspace without -n: every namespace and the cluster-scoped objects), in
dependency order: dependents first. Secrets and ConfigMaps, which a rule may protect as local targets, go only once
no object of a bound type is left (not a ServiceAccount's token Secret, nor kube-root-ca.crt).
The order comes from kcp itself: the blockers the webhook names when it refuses a DELETE (status.details.causes),
so no access to the rules is needed. The run is pipelined, not wave by wave, and sends no dry run: each object gets
its DELETE at once (a DELETE the webhook refuses deletes nothing); one that is refused waits until every
blocker its refusal named is gone: absent, not merely Terminating (an object whose finalizers still hold it blocks
what it names until it is gone, and the run waits for it up to --timeout). A delete refused for another reason is
noted and the rest goes on. What has no known order goes last, in one final wave: when nothing else can move,
everything left is asked again at once (a DELETE that had no answer, a refused delete), then the objects you named
with --skip-protection are annotated and deleted, both with their uid as precondition (a new object of the same
name is never touched); if that delete fails, the annotation is taken off again. A named object is otherwise ordered
like the rest: only a cycle through it makes the plugin skip its protection. --plan dry-runs each object whose type
some rule protects, reading the rules from every workspace below root you may list, or from the workspaces named
with --rule-workspace (the providers' workspaces, for a consumer who may read their rules but not list root); when
the rules cannot all be read, it dry-runs every object. The run ends with a report of what is left and why: finalizers by name, the blockers that still reference
an object, refusals, cycles (-o json: the same as JSON).

A whole-workspace run (--workspace without -n) asks for confirmation on the terminal, or takes --yes; without a
terminal and without --yes it deletes nothing and says why (exit code 2).

With --plan nothing is deleted: the waves, what blocks what, cycles, objects held by finalizers.

Exit code: 0 done (or, with --plan, every object has a wave); 1 something is left (a cycle, a blocker outside the
teardown, a delete refused for another reason, a finalizer that does not clear before --timeout); 2 no answer, or
a whole-workspace run not confirmed.`,
  examples: [
    "kubectl dependencies teardown -n default --plan",
    "kubectl dependencies teardown -n default --plan --rule-workspace root:network-provider",
    "kubectl dependencies teardown -n default --timeout 5m",
    "kubectl dependencies teardown -n default -o json",
    "kubectl dependencies teardown --workspace root:consumer1 --plan -o json",
    "kubectl dependencies teardown --workspace root:consumer1 --yes",
  ],
  flags: [NAMESPACE, PLAN, RULE_WORKSPACE, OUTPUT, TIMEOUT, CONCURRENCY, SKIP_PROTECTION, YES],
  parse,
  async run(cmd, ctx) {
    const refused = await confirmed(cmd, ctx);
    return refused ?? runTeardown(cmd, ctx.progress, ctx.clock);
  },
};
