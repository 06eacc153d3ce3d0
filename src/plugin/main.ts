// The plugin's one dispatch: the kit reads the command line against every command's flag table, the command parses
// what the kit found, runs, and its result becomes output and an exit code. Every failure is one line on stderr and
// exit code 2; a stack trace only with DEBUG set, for a bug report.
import { readCommandLine, UsageError, type ArgProblem, type Program } from "../cli/kit.ts";
import type { Clock } from "../util/clock.ts";
import { printable } from "../util/printable.ts";
import { COMMANDS, type Command } from "./commands.ts";
import { connectionOf, CONNECTION_FLAGS, type CommandResult } from "./contract.ts";
import { helpPage } from "./help.ts";
import { failed, type Output } from "./output.ts";

export type { Output } from "./output.ts";
export type { Command } from "./commands.ts";

export const PROGRAM: Program = {
  common: CONNECTION_FLAGS,
  commands: COMMANDS.map((c) => ({ name: c.name, flags: c.flags, ...(c.args ? { args: true } : {}) })),
};

export type ParsedArgs = { ok: true; command: Command } | { ok: false; error: string; topic?: string };

/** The kit's problems in the words kubectl users know (`unknown flag --all`, `-n needs a value`). */
function phrase(p: ArgProblem | undefined, command: string | undefined): string | undefined {
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

/** argv → help, or a command with its flags read; or what is wrong, and the command it is about. Pure. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  let topic: string | undefined;
  try {
    const line = readCommandLine(PROGRAM, argv);
    if (line.help)
      return { ok: true, command: line.command ? { name: "help", topic: line.command } : { name: "help" } };
    topic = line.command;
    const cmd = COMMANDS.find((c) => c.name === line.command)!;
    return { ok: true, command: cmd.parse(line.given, connectionOf(line.given)) };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    topic ??= err.command;
    const error = phrase(err.problem, topic) ?? err.message;
    return topic ? { ok: false, error, topic } : { ok: false, error };
  }
}

function write(r: CommandResult, io: Output): number {
  // A note may quote kcp's answer (why a workspace could not be read): one printable line each.
  for (const note of r.notes ?? []) io.err(`note: ${printable(note)}\n`);
  if (r.error !== undefined) io.err(`error: ${r.error}`);
  else io.out(r.text);
  return r.exitCode;
}

export async function run(
  argv: readonly string[],
  io: Output,
  env: NodeJS.ProcessEnv = {},
  clock?: Clock,
): Promise<number> {
  const parsed = parseArgs(argv);
  if (!parsed.ok) {
    io.err(
      `error: ${parsed.error}\nRun "kubectl dependencies ${parsed.topic ? `${parsed.topic} ` : ""}--help" for usage.\n`,
    );
    return 2;
  }
  const cmd = parsed.command;
  if (cmd.name === "help") {
    io.out(helpPage(cmd.topic) + "\n");
    return 0;
  }
  try {
    const command = COMMANDS.find((c) => c.name === cmd.name)!;
    const progress = (line: string): void => io.err(`${line}\n`);
    const ask = io.ask?.bind(io);
    return write(await command.run(cmd, { progress, ...(clock ? { clock } : {}), ...(ask ? { ask } : {}) }), io);
  } catch (err) {
    return failed(err, io, env);
  }
}
