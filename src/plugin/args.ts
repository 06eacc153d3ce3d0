// The plugin's command line: `kubectl dependencies <why|graph|check> ...`, read by the command kit. Pure: argv in, a
// command or a message that says what is wrong out. kubectl passes everything after the plugin name through unchanged.
import { readCommandLine, UsageError, type ArgProblem, type Flag, type GivenArgs, type Program } from "../cli/kit.ts";
import { VERIFY_FLAGS, verifyCommandOf, type VerifyCommand } from "./verify/command.ts";

export type OutputFormat = "mermaid" | "dot" | "json";
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["mermaid", "dot", "json"];
export type Topic = "why" | "graph" | "check" | "verify";

import type { Connection } from "./session.ts";
export type { Connection } from "./session.ts";

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

export interface GraphCommand {
  name: "graph";
  format: OutputFormat;
  /** Objects of one consumer workspace instead of the type-level graph of the rules. */
  objects: boolean;
  /** Workspaces to read rules from; empty: every readable workspace below `root`. */
  ruleWorkspaces: string[];
  connection: Connection;
}

export interface CheckCommand {
  name: "check";
  ruleWorkspaces: string[];
  connection: Connection;
}

export type Command = { name: "help"; topic?: Topic } | WhyCommand | GraphCommand | CheckCommand | VerifyCommand;

export type ParsedArgs = { ok: true; command: Command } | { ok: false; error: string; topic?: Topic };

const RULE_WORKSPACE: Flag = {
  name: "rule-workspace",
  arg: "<path>",
  help: "a workspace to read DependencyRules from (repeatable)",
};

/** The flags each command takes; the help texts that list them for users are in help.ts. */
export const PROGRAM: Program = {
  common: [
    { name: "kubeconfig", arg: "<file>", help: "kubeconfig to use" },
    { name: "context", arg: "<name>", help: "kubeconfig context to use" },
    { name: "workspace", arg: "<path>", help: "kcp workspace to act in" },
  ],
  commands: [
    {
      name: "why",
      args: true,
      flags: [{ name: "namespace", short: "n", arg: "<ns>", help: "namespace of the object" }, RULE_WORKSPACE],
    },
    {
      name: "graph",
      flags: [
        { name: "output", short: "o", arg: "<format>", help: "mermaid, dot or json" },
        { name: "objects", boolean: true, help: "the object graph of --workspace instead of the type graph" },
        RULE_WORKSPACE,
      ],
    },
    { name: "check", flags: [RULE_WORKSPACE] },
    { name: "verify", flags: VERIFY_FLAGS },
  ],
};

/** The kit's problems in the words kubectl users know (`unknown flag --all`, `-n needs a value`). */
export function phrase(p: ArgProblem | undefined, command: string | undefined): string | undefined {
  switch (p?.kind) {
    case "unknown-flag":
      return `unknown flag ${p.flag}`;
    case "missing-value":
      return `${p.flag} needs a value`;
    case "unexpected-value":
      return `${p.flag} takes no value`;
    case "flag-not-taken":
      return `${command} does not take --${p.flag === "namespace" ? "namespace (-n)" : p.flag}`;
    default:
      return undefined;
  }
}

/** The last value given for a flag (kubectl's behaviour for repeated single-value flags). */
const last = (g: GivenArgs, key: string): string | undefined => g.values.get(key)?.at(-1);

function connectionOf(g: GivenArgs): Connection {
  const c: Connection = {};
  const kubeconfig = last(g, "kubeconfig");
  const context = last(g, "context");
  const workspace = last(g, "workspace");
  if (kubeconfig) c.kubeconfig = kubeconfig;
  if (context) c.context = context;
  if (workspace) c.workspace = workspace;
  return c;
}

/** `vpc/my-vpc`, or `vpc my-vpc` as kubectl also takes it. */
function parseTarget(positional: readonly string[]): { resource: string; name: string } | { error: string } {
  const usage = "why needs one object: <resource>/<name> (e.g. vpc/my-vpc) or <resource> <name>";
  if (positional.length === 1) {
    const [resource, name, ...rest] = positional[0]!.split("/");
    if (!resource || !name || rest.length > 0) return { error: usage };
    return { resource, name };
  }
  if (positional.length === 2 && !positional[0]!.includes("/") && !positional[1]!.includes("/"))
    return { resource: positional[0]!, name: positional[1]! };
  return { error: usage };
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  try {
    const line = readCommandLine(PROGRAM, argv);
    if (line.help)
      return { ok: true, command: line.command ? { name: "help", topic: line.command as Topic } : { name: "help" } };
    return commandFor(line.command as Topic, line.given);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    const error = phrase(err.problem, err.command) ?? err.message;
    return err.command ? { ok: false, error, topic: err.command as Topic } : { ok: false, error };
  }
}

/** The command `topic` with its arguments and flags, once the kit has checked that it takes them. */
function commandFor(topic: Topic, given: GivenArgs): ParsedArgs {
  const fail = (error: string): ParsedArgs => ({ ok: false, error, topic });
  const connection = connectionOf(given);
  const ruleWorkspaces = given.values.get("rule-workspace") ?? [];
  switch (topic) {
    case "why": {
      const target = parseTarget(given.positionals);
      if ("error" in target) return fail(target.error);
      const namespace = last(given, "namespace");
      const why: WhyCommand = {
        name: "why",
        resource: target.resource,
        objectName: target.name,
        ruleWorkspaces,
        connection,
      };
      return { ok: true, command: namespace ? { ...why, namespace } : why };
    }
    case "graph": {
      const format = last(given, "output") ?? "mermaid";
      if (!OUTPUT_FORMATS.includes(format as OutputFormat))
        return fail(`-o ${format}: the output format is one of ${OUTPUT_FORMATS.join(", ")}`);
      const objects = given.switches.has("objects");
      return {
        ok: true,
        command: { name: "graph", format: format as OutputFormat, objects, ruleWorkspaces, connection },
      };
    }
    case "check":
      return { ok: true, command: { name: "check", ruleWorkspaces, connection } };
    case "verify": {
      const v = verifyCommandOf(given, connection);
      return "error" in v ? fail(v.error) : { ok: true, command: v.command };
    }
  }
}
