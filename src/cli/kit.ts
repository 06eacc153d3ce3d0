// What both binaries share at their edge: flags with environment fallbacks (a flag wins over its variable), one
// generated usage text, usage errors as one line, startup errors as one line without a stack trace, and a clean
// shutdown on SIGTERM/SIGINT (or an AbortSignal in tests). Each binary declares its flags and a start function.
// The command line itself is read in args.ts, which the kubectl plugin uses too (subcommands, arguments). The kit sits
// below src/cmd/ and src/plugin/, which both use it: it imports neither.
import type { Logger } from "pino";
import { InsecureKcpError } from "../kcp/kubeconfig.ts";
import { parseListenAddress } from "../observability/health.ts";
import { HELP_FLAG, scanArgs, UsageError, type Flag, type GivenArgs } from "./args.ts";

export {
  HELP_FLAG,
  readCommandLine,
  scanArgs,
  UsageError,
  type ArgProblem,
  type CommandLine,
  type Flag,
  type GivenArgs,
  type Program,
  type Subcommand,
} from "./args.ts";

export type FlagValues = Record<string, string | undefined>;

/** A flag as --help lists it: how it is typed (`-n, --namespace <ns>`) and what it does, its default and variable. */
export function flagHelp(f: Flag): { left: string; right: string } {
  const left = `${f.short ? `-${f.short}, ` : ""}--${f.name}${f.arg ? ` ${f.arg}` : ""}`;
  const def = f.default ?? f.defaultText;
  return { left, right: `${f.help}${def !== undefined ? ` (default ${def})` : ""}${f.env ? ` [${f.env}]` : ""}` };
}

export function usage(command: string, summary: string, flags: readonly Flag[]): string {
  const rows = flags.map((f) => {
    const { left, right } = flagHelp(f);
    return `${`  ${left}`.padEnd(38)} ${right}`;
  });
  return `Usage: ${command} [flags]\n\n${summary}\n\nFlags (environment variable in brackets):\n${rows.join("\n")}\n  -h, --help                           show this help\n`;
}

/** Parses `argv` strictly (no arguments, known flags only); returns "help" for -h/--help. Empty values count as not set. */
export function readFlags(
  flags: readonly Flag[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): FlagValues | "help" {
  let given: GivenArgs;
  try {
    given = scanArgs([...flags, HELP_FLAG], argv, { positionals: false });
  } catch (err) {
    if (err instanceof UsageError) throw new UsageError(`${err.message} (see --help)`, err.problem);
    throw err;
  }
  if (given.switches.has("help")) return "help";
  const out: FlagValues = {};
  for (const f of flags) {
    // A repeated flag: the last one counts.
    const last = f.boolean ? (given.switches.has(f.name) ? "true" : undefined) : given.values.get(f.name)?.at(-1);
    const fromEnv = f.env ? env[f.env] : undefined;
    out[f.name] =
      last !== undefined && last !== "" ? last : fromEnv !== undefined && fromEnv !== "" ? fromEnv : f.default;
  }
  return out;
}

/** Value parsers with the flag's name in every error. */
export const parse = {
  required(v: string | undefined, flag: string, what: string): string {
    if (v === undefined) throw new UsageError(`--${flag} is required (${what})`);
    return v;
  },
  bool(v: string, flag: string): boolean {
    if (/^(true|1|yes)$/i.test(v)) return true;
    if (/^(false|0|no)$/i.test(v)) return false;
    throw new UsageError(`--${flag}: want true or false, got "${v}"`);
  },
  /** `30s`, `2m`, `1h`, `500ms`; at least `minMs`. */
  duration(v: string, flag: string, minMs = 1_000): number {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(v.trim());
    if (!m) throw new UsageError(`--${flag}: invalid duration "${v}" (want e.g. 30s, 2m)`);
    const ms = Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
    if (ms < minMs) throw new UsageError(`--${flag}: must be at least ${minMs} ms`);
    return ms;
  },
  port(v: string, flag: string): number {
    const port = Number(v);
    if (!/^\d+$/.test(v) || port > 65535) throw new UsageError(`--${flag} ${JSON.stringify(v)} is not a port number`);
    return port;
  },
  listen(v: string, flag: string): string {
    try {
      parseListenAddress(v);
    } catch (err) {
      throw new UsageError(`--${flag}: ${(err as Error).message}`);
    }
    return v;
  },
};

/** A started binary: its listening ports (for tests and logs) and how to stop it. */
export interface Started {
  ports: Record<string, number>;
  stop(): Promise<void>;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Where --help and the one-line errors go (default: the process's streams). */
  stdout?: (s: string) => void;
  stderr?: (s: string) => void;
  /** Stops the binary when aborted; default: SIGTERM or SIGINT. */
  signal?: AbortSignal;
  logger?: Logger;
  /** Called once serving. */
  onStarted?: (started: Started) => void;
}

export interface Command<C> {
  name: string;
  usage: string;
  parse(argv: readonly string[], env: NodeJS.ProcessEnv): C | "help";
  start(config: C, logger: Logger): Promise<Started>;
  logger(): Logger;
}

/**
 * The whole program: parse, start, wait for the signal, stop. Resolves to the exit code: 0; 2 for a usage error or a
 * kcp connection refused as insecure (the command line or kubeconfig must change); 1 for any other error.
 */
export async function runCommand<C>(cmd: Command<C>, argv: readonly string[], opts: RunOptions = {}): Promise<number> {
  const stdout = opts.stdout ?? ((s: string) => process.stdout.write(s));
  const stderr = opts.stderr ?? ((s: string) => process.stderr.write(s));
  let started: Started;
  try {
    const config = cmd.parse(argv, opts.env ?? process.env);
    if (config === "help") {
      stdout(cmd.usage);
      return 0;
    }
    started = await cmd.start(config, opts.logger ?? cmd.logger());
  } catch (err) {
    stderr(`${cmd.name}: ${oneLine(err)}\n`);
    return err instanceof UsageError || err instanceof InsecureKcpError ? 2 : 1;
  }
  opts.onStarted?.(started);
  await waitForShutdown(opts.signal);
  await started.stop();
  return 0;
}

function oneLine(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ECONNREFUSED" || e?.code === "ENOTFOUND") return `cannot reach kcp: ${e.message}`;
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, " ");
}

function waitForShutdown(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal) {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
      return;
    }
    const done = (): void => {
      process.off("SIGTERM", done);
      process.off("SIGINT", done);
      resolve();
    };
    process.once("SIGTERM", done);
    process.once("SIGINT", done);
  });
}
