// The plugin's one command contract. A subcommand is a folder under src/plugin/commands/ that exports one
// PluginCommand: its name, what its help says (usage, summary, prose, examples), its flag table, and parse and run.
// main.ts dispatches over the list; help.ts writes every help page and docs/plugin.md's flag tables from the same
// tables, so a default or a flag cannot differ between the code, --help and the docs. Reading a flag goes through
// the readers below, which take the default from the table.
import { parse, UsageError, type Flag, type GivenArgs } from "../cli/kit.ts";
import type { Clock } from "../util/clock.ts";
import type { Connection } from "./session.ts";

/** How a flag's value is read, and how help and the docs name it. */
export type FlagType = "switch" | "text" | "list" | "format" | "count" | "duration";

export interface CommandFlag extends Flag {
  type: FlagType;
  /** `format`: the values it takes. */
  values?: readonly string[];
  /** `count`: the range it takes. */
  min?: number;
  max?: number;
}

export interface CommandResult {
  /** 0: done, nothing found; 1: something found or refused; 2: no answer. */
  exitCode: 0 | 1 | 2;
  /** What goes to stdout. */
  text: string;
  /** Notes for stderr: what could not be read. */
  notes?: string[];
  /** Instead of `text`: the one line on stderr of a command that could not answer (exit code 2). */
  error?: string;
}

export interface RunContext {
  /** A progress line for stderr (teardown). */
  progress: (line: string) => void;
  clock?: Clock;
  /** Asks a person on the terminal; absent when no one can answer. */
  ask?: (question: string) => Promise<string>;
}

export interface PluginCommand<C> {
  name: string;
  /** What follows `kubectl dependencies <name>` on the help page's first line. */
  usage: string;
  /** The overview's line: the command as typed, and what it answers. */
  brief: string;
  summary: string;
  /** The help page's paragraphs between the usage and the flags (exit codes included). */
  prose: string;
  examples: readonly string[];
  /** Takes positional arguments; without, any is refused. */
  args?: boolean;
  /** Its flags besides the connection flags every command takes. */
  flags: readonly CommandFlag[];
  /** The command from the flags the kit found; a UsageError says what is wrong. */
  parse(given: GivenArgs, connection: Connection): C;
  run(cmd: C, ctx: RunContext): Promise<CommandResult>;
}

/** The flags every command takes: where to connect and which workspace to act in (as kubectl). */
export const CONNECTION_FLAGS: readonly CommandFlag[] = [
  {
    name: "kubeconfig",
    type: "text",
    arg: "<file>",
    defaultText: "$KUBECONFIG, then ~/.kube/config",
    help: "kubeconfig to use",
  },
  {
    name: "context",
    type: "text",
    arg: "<name>",
    defaultText: "its current context",
    help: "kubeconfig context to use",
  },
  {
    name: "workspace",
    type: "text",
    arg: "<path>",
    defaultText: "the one in the kubeconfig's server URL",
    help: "kcp workspace to act in, e.g. root:consumer1",
  },
];

/** `--rule-workspace`, as graph, check, verify and teardown (--plan) read it; why words it for its own use. */
export const RULE_WORKSPACE: CommandFlag = {
  name: "rule-workspace",
  type: "list",
  arg: "<path>",
  defaultText: "every workspace below root you may list, recursively, reading rules where you may",
  help: "read DependencyRules from this workspace (repeatable)",
};

/** `-o`: one of `values`, the first by default. */
export function outputFlag(values: readonly string[], help: string): CommandFlag {
  return { name: "output", short: "o", type: "format", arg: "<format>", values, default: values[0]!, help };
}

/** `-n`, as kubectl has it; what it means is the command's. */
export function namespaceFlag(help: string, defaultText?: string): CommandFlag {
  return { name: "namespace", short: "n", type: "text", arg: "<ns>", ...(defaultText ? { defaultText } : {}), help };
}

/** The last value given (kubectl's reading of a repeated single-value flag), else the table's default. */
const last = (g: GivenArgs, f: CommandFlag): string | undefined => g.values.get(f.name)?.at(-1) ?? f.default;

/** Each flag's value as its type reads it, the default from its table; a bad value is a UsageError. */
export const read = {
  text: (g: GivenArgs, f: CommandFlag): string | undefined => last(g, f),
  list: (g: GivenArgs, f: CommandFlag): string[] => g.values.get(f.name) ?? [],
  switch: (g: GivenArgs, f: CommandFlag): boolean => g.switches.has(f.name),
  format<T extends string>(g: GivenArgs, f: CommandFlag): T {
    const v = last(g, f)!;
    if (!f.values?.includes(v))
      throw new UsageError(`-${f.short ?? ""} ${v}: the output format is one of ${(f.values ?? []).join(", ")}`);
    return v as T;
  },
  count(g: GivenArgs, f: CommandFlag): number {
    const v = last(g, f)!;
    const n = Number(v);
    const min = f.min ?? 1;
    const max = f.max ?? Number.MAX_SAFE_INTEGER;
    if (!/^\d+$/.test(v) || n < min || n > max)
      throw new UsageError(`--${f.name} ${v}: want a whole number from ${min} to ${max}`);
    return n;
  },
  duration: (g: GivenArgs, f: CommandFlag): number => parse.duration(last(g, f)!, f.name),
};

/** The connection flags, read once for every command. */
export function connectionOf(g: GivenArgs): Connection {
  const c: Connection = {};
  for (const f of CONNECTION_FLAGS) {
    const v = read.text(g, f);
    if (v) c[f.name as keyof Connection] = v;
  }
  return c;
}
