// `kubectl dependencies teardown`'s command line, read by the command kit with the plugin's other commands beside it
// (so a flag of another command is named as such). Pure: argv in; undefined when the command line is not teardown's.
import { parse, readCommandLine, UsageError, type Flag, type Program } from "../../cli/kit.ts";
import { phrase, PROGRAM, type Connection } from "../args.ts";

export type PlanFormat = "table" | "json";

export interface TeardownCommand {
  name: "teardown";
  /** One namespace; undefined: the whole workspace (--workspace given, no -n). */
  namespace?: string;
  plan: boolean;
  format: PlanFormat;
  timeoutMs: number;
  concurrency: number;
  /** `<resource>/<name>` the user allows skip-protection for. */
  skipProtection: string[];
  connection: Connection;
}

export type TeardownArgs =
  | { ok: true; command: TeardownCommand | { name: "help"; topic: "teardown" } }
  | { ok: false; error: string; topic: "teardown" };

export const TEARDOWN_FLAGS: readonly Flag[] = [
  { name: "namespace", short: "n", arg: "<ns>", help: "the namespace to empty" },
  { name: "plan", boolean: true, help: "print the plan, delete nothing" },
  { name: "output", short: "o", arg: "<format>", help: "table or json (with --plan)" },
  { name: "timeout", arg: "<duration>", help: "give up after this long (default 10m)" },
  { name: "concurrency", arg: "<n>", help: "requests at a time (default 32)" },
  { name: "skip-protection", arg: "<resource>/<name>", help: "allow skip-protection for this object (repeatable)" },
];

export const WITH_TEARDOWN: Program = {
  ...PROGRAM,
  commands: [...PROGRAM.commands, { name: "teardown", flags: TEARDOWN_FLAGS }],
};

export function parseTeardownArgs(argv: readonly string[]): TeardownArgs | undefined {
  try {
    const line = readCommandLine(WITH_TEARDOWN, argv);
    if (line.command !== "teardown") return undefined;
    if (line.help) return { ok: true, command: { name: "help", topic: "teardown" } };
    const g = line.given;
    const last = (k: string): string | undefined => g.values.get(k)?.at(-1);
    const connection: Connection = {};
    for (const k of ["kubeconfig", "context", "workspace"] as const) {
      const v = last(k);
      if (v) connection[k] = v;
    }
    const namespace = last("namespace");
    if (!namespace && !connection.workspace)
      throw new UsageError("say what to take down: -n <namespace>, or --workspace <path> for the whole workspace");
    if (last("output") !== undefined && !g.switches.has("plan"))
      throw new UsageError("-o is for --plan: a run reports as text (progress on stderr, the report on stdout)");
    const format = last("output") ?? "table";
    if (format !== "table" && format !== "json")
      throw new UsageError(`-o ${format}: the output format is one of table, json`);
    const concurrency = Number(last("concurrency") ?? "32");
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)
      throw new UsageError(`--concurrency ${last("concurrency")}: want a whole number from 1 to 64`);
    const command: TeardownCommand = {
      name: "teardown",
      plan: g.switches.has("plan"),
      format,
      timeoutMs: parse.duration(last("timeout") ?? "10m", "timeout"),
      concurrency,
      skipProtection: g.values.get("skip-protection") ?? [],
      connection,
      ...(namespace ? { namespace } : {}),
    };
    return { ok: true, command };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.command !== undefined && err.command !== "teardown") return undefined;
    if (err.command === undefined && !argv.includes("teardown")) return undefined;
    return { ok: false, error: phrase(err.problem, "teardown") ?? err.message, topic: "teardown" };
  }
}
