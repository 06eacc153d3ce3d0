// The command kit's command line: flags (long names, one-letter aliases, switches, repeated values), positional
// arguments and subcommands, one reading for the two binaries and the kubectl plugin (src/cmd/, src/plugin/). node:util's parseArgs splits
// argv into tokens in its loose mode; the checks its strict mode would make are made here instead, so that every
// problem is a UsageError naming the flag as typed, with a `problem` a front end may put in its own words.
import { parseArgs } from "node:util";

export interface Flag {
  name: string;
  /** One-letter alias: `n` for `-n`. */
  short?: string;
  /** A switch: given or not, never with a value. */
  boolean?: boolean;
  /** Environment variable read when the flag is not given (flat commands only). */
  env?: string;
  default?: string;
  /** The default in words, when it is found at run time (the kubeconfig's namespace); help shows it as a default. */
  defaultText?: string;
  /** One line for --help; `VALUE` words in `arg` name the value. */
  help: string;
  arg?: string;
}

/** What is wrong with a command line, the flag named as the user typed it (`-n`, `--namespace`). */
export type ArgProblem =
  | { kind: "unknown-flag"; flag: string }
  | { kind: "missing-value"; flag: string }
  | { kind: "unexpected-value"; flag: string }
  | { kind: "unexpected-argument"; arg: string }
  | { kind: "missing-command" }
  | { kind: "unknown-command"; arg: string }
  /** `flag` is the flag's name: another subcommand takes it. */
  | { kind: "flag-not-taken"; flag: string }
  | { kind: "arguments-not-taken"; args: string[] };

export class UsageError extends Error {
  override name = "UsageError";
  readonly problem: ArgProblem | undefined;
  /** The subcommand the error is about, when one was recognised (for a "<command> --help" hint). */
  readonly command: string | undefined;

  constructor(message: string, problem?: ArgProblem, command?: string) {
    super(message);
    this.problem = problem;
    this.command = command;
  }
}

export const HELP_FLAG: Flag = { name: "help", short: "h", boolean: true, help: "show this help" };

/** The flags given, by name: every value in the order given (readers take the last or all), and the switches. */
export interface GivenArgs {
  values: Map<string, string[]>;
  switches: Set<string>;
  positionals: string[];
}

export interface ScanOptions {
  positionals: boolean;
  /** `--flag=` is a missing value; otherwise an empty value is kept (flat commands read it as not set). */
  refuseEmpty?: boolean;
}

type ScanProblem = Extract<
  ArgProblem,
  { kind: "unknown-flag" | "missing-value" | "unexpected-value" | "unexpected-argument" }
>;

// The binaries' wording from when they parsed with node's strict mode; front ends may phrase `problem` themselves.
function problemError(p: ScanProblem): UsageError {
  switch (p.kind) {
    case "unknown-flag":
      return new UsageError(`Unknown option '${p.flag}'`, p);
    case "missing-value":
      return new UsageError(`Option '${p.flag} <value>' argument missing`, p);
    case "unexpected-value":
      return new UsageError(`Option '${p.flag}' does not take an argument`, p);
    case "unexpected-argument":
      return new UsageError(`Unexpected argument '${p.arg}'. This command does not take positional arguments`, p);
  }
}

/** Reads argv against `flags`; throws UsageError at the first problem, in argv order. */
export function scanArgs(flags: readonly Flag[], argv: readonly string[], opts: ScanOptions): GivenArgs {
  const byName = new Map(flags.map((f) => [f.name, f]));
  const options = Object.fromEntries(
    flags.map((f) => [
      f.name,
      { type: f.boolean ? ("boolean" as const) : ("string" as const), ...(f.short ? { short: f.short } : {}) },
    ]),
  );
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const given: GivenArgs = { values: new Map(), switches: new Set(), positionals: [] };
  for (const t of tokens) {
    if (t.kind === "option-terminator") continue;
    if (t.kind === "positional") {
      if (!opts.positionals) throw problemError({ kind: "unexpected-argument", arg: t.value });
      given.positionals.push(t.value);
      continue;
    }
    const flag = byName.get(t.name);
    if (!flag) throw problemError({ kind: "unknown-flag", flag: t.rawName });
    if (flag.boolean) {
      if (t.value !== undefined) throw problemError({ kind: "unexpected-value", flag: t.rawName });
      given.switches.add(flag.name);
      continue;
    }
    // `-n=x` means x, as kubectl reads it; parseArgs keeps the `=` of a short flag's attached value.
    let value = t.value;
    if (value !== undefined && t.inlineValue && !t.rawName.startsWith("--") && value.startsWith("="))
      value = value.slice(1);
    if (value === undefined || (opts.refuseEmpty && value === ""))
      throw problemError({ kind: "missing-value", flag: t.rawName });
    given.values.set(flag.name, [...(given.values.get(flag.name) ?? []), value]);
  }
  return given;
}

export interface Subcommand {
  name: string;
  /** Its flags besides the program's common ones and --help. */
  flags: readonly Flag[];
  /** Takes positional arguments; without, any argument is refused. */
  args?: boolean;
}

export interface Program {
  commands: readonly Subcommand[];
  /** Flags every subcommand takes. */
  common: readonly Flag[];
}

export type CommandLine = { help: true; command?: string } | { help: false; command: string; given: GivenArgs };

/** `a, b or c` */
const orList = (names: readonly string[]): string =>
  names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;

/**
 * `<command> [args] [flags]`, flags anywhere. Every program flag is known to the scan, so one that belongs to
 * another subcommand is named as such rather than as unknown. `help [command]` and `--help` ask for help.
 */
export function readCommandLine(program: Program, argv: readonly string[]): CommandLine {
  const names = program.commands.map((c) => c.name);
  // Until the scan succeeds, the command a problem is about is a guess: the first word that is not a flag.
  const first = argv.find((a) => !a.startsWith("-"));
  const guess = first !== undefined && names.includes(first) ? first : undefined;
  const all = new Map(
    [...program.common, ...program.commands.flatMap((c) => c.flags), HELP_FLAG].map((f) => [f.name, f]),
  );
  let given: GivenArgs;
  try {
    given = scanArgs([...all.values()], argv, { positionals: true, refuseEmpty: true });
  } catch (err) {
    if (err instanceof UsageError) throw new UsageError(err.message, err.problem, guess);
    throw err;
  }
  const [word, ...rest] = given.positionals;
  if (word === undefined || word === "help") {
    const topic = rest[0];
    if (topic !== undefined && names.includes(topic)) return { help: true, command: topic };
    if (word === undefined && !given.switches.has("help"))
      throw new UsageError(`missing command: one of ${names.join(", ")}`, { kind: "missing-command" });
    return { help: true };
  }
  const cmd = program.commands.find((c) => c.name === word);
  if (!cmd)
    throw new UsageError(`unknown command "${word}": use ${orList(names)}`, { kind: "unknown-command", arg: word });
  const fail = (message: string, p: ArgProblem): UsageError => new UsageError(message, p, word);
  if (given.switches.has("help")) return { help: true, command: word };
  const taken = new Set([...program.common, ...cmd.flags, HELP_FLAG].map((f) => f.name));
  for (const name of [...given.values.keys(), ...given.switches])
    if (!taken.has(name)) throw fail(`${word} does not take --${name}`, { kind: "flag-not-taken", flag: name });
  if (!cmd.args && rest.length > 0)
    throw fail(`${word} takes no arguments, got "${rest.join(" ")}"`, { kind: "arguments-not-taken", args: rest });
  return { help: false, command: word, given: { ...given, positionals: rest } };
}
