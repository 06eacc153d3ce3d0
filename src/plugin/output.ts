// Where the plugin's commands write, and how any failure ends one: one line on stderr, exit code 2.
import { printable } from "../util/printable.ts";
import { PluginError } from "./session.ts";

export interface Output {
  out(text: string): void;
  err(text: string): void;
  /** Asks a person on the terminal; absent when no one can answer (stdin is not a terminal). */
  ask?(question: string): Promise<string>;
}

/**
 * Any failure: one line on stderr (printable: it may quote kcp's or another webhook's text), the stack only with
 * DEBUG set (for a bug report), exit code 2.
 */
export function failed(err: unknown, io: Output, env: NodeJS.ProcessEnv): 2 {
  const message = err instanceof PluginError ? err.message : `unexpected: ${(err as Error)?.message ?? String(err)}`;
  io.err(`error: ${printable(message)}\n`);
  // The stack starts with the message: each of its lines is made printable too.
  if (env["DEBUG"] && err instanceof Error && err.stack) io.err(`${err.stack.split("\n").map(printable).join("\n")}\n`);
  return 2;
}
