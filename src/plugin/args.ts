// The plugin's command line: `kubectl dependencies <why|graph|check> ...`. Pure: argv in, a command or a message
// that says what is wrong out. kubectl passes everything after the plugin name through unchanged.
export { HELP } from "./help.ts";

export type OutputFormat = "mermaid" | "dot" | "json";
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["mermaid", "dot", "json"];
export type Topic = "why" | "graph" | "check";

/** Where to connect and which workspace to act in; each defaults to the kubeconfig's. */
export interface Connection {
  kubeconfig?: string;
  context?: string;
  /** The workspace the command acts in (`root:consumer1`); default: the kubeconfig server's `/clusters/<x>`. */
  workspace?: string;
}

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

export type Command = { name: "help"; topic?: Topic } | WhyCommand | GraphCommand | CheckCommand;

export type ParsedArgs = { ok: true; command: Command } | { ok: false; error: string; topic?: Topic };

const TOPICS: readonly string[] = ["why", "graph", "check"];

/** Flags that take a value, by every spelling, mapped to one key. */
const VALUE_FLAGS: Record<string, string> = {
  "--kubeconfig": "kubeconfig",
  "--context": "context",
  "--workspace": "workspace",
  "-n": "namespace",
  "--namespace": "namespace",
  "-o": "output",
  "--output": "output",
  "--rule-workspace": "rule-workspace",
};
const BOOL_FLAGS: Record<string, string> = { "--objects": "objects", "-h": "help", "--help": "help" };

/** Which flags each subcommand accepts besides the connection flags and --help. */
const ALLOWED: Record<Topic, readonly string[]> = {
  why: ["namespace", "rule-workspace"],
  graph: ["output", "objects", "rule-workspace"],
  check: ["rule-workspace"],
};
const CONNECTION_KEYS = ["kubeconfig", "context", "workspace", "help"];

interface Scanned {
  positional: string[];
  values: Map<string, string[]>;
  bools: Set<string>;
}

function scan(argv: readonly string[]): Scanned | { error: string } {
  const out: Scanned = { positional: [], values: new Map(), bools: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      out.positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      out.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const bool = BOOL_FLAGS[flag];
    if (bool) {
      if (eq > 0) return { error: `${flag} takes no value` };
      out.bools.add(bool);
      continue;
    }
    const key = VALUE_FLAGS[flag];
    if (!key) return { error: `unknown flag ${flag}` };
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else value = argv[++i];
    if (value === undefined || value === "") return { error: `${flag} needs a value` };
    out.values.set(key, [...(out.values.get(key) ?? []), value]);
  }
  return out;
}

/** The last value given for a flag (kubectl's behaviour for repeated single-value flags). */
const last = (s: Scanned, key: string): string | undefined => s.values.get(key)?.at(-1);

function connectionOf(s: Scanned): Connection {
  const c: Connection = {};
  const kubeconfig = last(s, "kubeconfig");
  const context = last(s, "context");
  const workspace = last(s, "workspace");
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
  const scanned = scan(argv);
  const first = argv.find((a) => !a.startsWith("-"));
  const topic = first !== undefined && TOPICS.includes(first) ? (first as Topic) : undefined;
  if ("error" in scanned)
    return topic ? { ok: false, error: scanned.error, topic } : { ok: false, error: scanned.error };
  const [sub, ...positional] = scanned.positional;
  if (sub === undefined || sub === "help") {
    const t = positional[0];
    if (t !== undefined && TOPICS.includes(t)) return { ok: true, command: { name: "help", topic: t as Topic } };
    if (sub === undefined && !scanned.bools.has("help"))
      return { ok: false, error: "missing command: one of why, graph, check" };
    return { ok: true, command: { name: "help" } };
  }
  if (!topic || sub !== topic) return { ok: false, error: `unknown command "${sub}": use why, graph or check` };
  if (scanned.bools.has("help")) return { ok: true, command: { name: "help", topic } };
  for (const key of [...scanned.values.keys(), ...scanned.bools]) {
    if (!CONNECTION_KEYS.includes(key) && !ALLOWED[topic].includes(key))
      return { ok: false, error: `${topic} does not take --${key === "namespace" ? "namespace (-n)" : key}`, topic };
  }
  return commandFor(topic, positional, scanned);
}

/** The command `topic` with its arguments and flags, once the flags are known to be ones it takes. */
function commandFor(topic: Topic, positional: readonly string[], scanned: Scanned): ParsedArgs {
  const fail = (error: string): ParsedArgs => ({ ok: false, error, topic });
  const connection = connectionOf(scanned);
  const ruleWorkspaces = scanned.values.get("rule-workspace") ?? [];
  switch (topic) {
    case "why": {
      const target = parseTarget(positional);
      if ("error" in target) return fail(target.error);
      const namespace = last(scanned, "namespace");
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
      if (positional.length > 0) return fail(`graph takes no arguments, got "${positional.join(" ")}"`);
      const format = last(scanned, "output") ?? "mermaid";
      if (!OUTPUT_FORMATS.includes(format as OutputFormat))
        return fail(`-o ${format}: the output format is one of ${OUTPUT_FORMATS.join(", ")}`);
      const objects = scanned.bools.has("objects");
      return {
        ok: true,
        command: { name: "graph", format: format as OutputFormat, objects, ruleWorkspaces, connection },
      };
    }
    case "check":
      if (positional.length > 0) return fail(`check takes no arguments, got "${positional.join(" ")}"`);
      return { ok: true, command: { name: "check", ruleWorkspaces, connection } };
  }
}
