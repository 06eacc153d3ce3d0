// teardown at the plugin's edge, as main.ts treats the other commands: help, a usage error (exit 2 with a hint),
// progress on stderr, the plan or the report on stdout, any failure one line on stderr with exit code 2.
import type { Clock } from "../../util/clock.ts";
import { HELP } from "../help.ts";
import { failed, type Output } from "../output.ts";
import type { TeardownArgs } from "./args.ts";
import { runTeardown } from "./command.ts";

export async function teardownCli(
  parsed: TeardownArgs,
  io: Output,
  env: NodeJS.ProcessEnv,
  clock?: Clock,
): Promise<number> {
  if (!parsed.ok) {
    io.err(`error: ${parsed.error}\nRun "kubectl dependencies teardown --help" for usage.\n`);
    return 2;
  }
  const cmd = parsed.command;
  if (cmd.name === "help") {
    io.out(HELP.teardown + "\n");
    return 0;
  }
  try {
    const r = await runTeardown(cmd, (line) => io.err(`${line}\n`), clock);
    io.out(r.text);
    return r.exitCode;
  } catch (err) {
    return failed(err, io, env);
  }
}
