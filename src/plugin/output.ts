// Where the plugin's commands write, and how any failure ends one: one line on stderr, exit code 2.
import { PluginError } from "./source.ts";

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** Any failure: one line on stderr, the stack only with DEBUG set (for a bug report), exit code 2. */
export function failed(err: unknown, io: Output, env: NodeJS.ProcessEnv): 2 {
  const message = err instanceof PluginError ? err.message : `unexpected: ${(err as Error)?.message ?? String(err)}`;
  io.err(`error: ${message}\n`);
  if (env["DEBUG"] && err instanceof Error && err.stack) io.err(`${err.stack}\n`);
  return 2;
}
