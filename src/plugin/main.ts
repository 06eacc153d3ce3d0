// The plugin's entry logic: arguments to a command, a command to output and an exit code. Every failure is one line
// on stderr and exit code 2; a stack trace only with DEBUG set, for a bug report.
import { parseArgs } from "./args.ts";
import { HELP } from "./help.ts";
import { runCheck, runGraph } from "./inspect.ts";
import { failed, type Output } from "./output.ts";
import { parseTeardownArgs } from "./teardown/args.ts";
import { teardownCli } from "./teardown/cli.ts";
import { printable } from "../util/printable.ts";
import { runVerify } from "./verify/run.ts";
import { runWhy } from "./why.ts";

export type { Output } from "./output.ts";

export async function run(argv: readonly string[], io: Output, env: NodeJS.ProcessEnv = {}): Promise<number> {
  const teardown = parseTeardownArgs(argv);
  if (teardown) return teardownCli(teardown, io, env);
  const parsed = parseArgs(argv);
  if (!parsed.ok) {
    io.err(
      `error: ${parsed.error}\nRun "kubectl dependencies ${parsed.topic ? `${parsed.topic} ` : ""}--help" for usage.\n`,
    );
    return 2;
  }
  const cmd = parsed.command;
  try {
    switch (cmd.name) {
      case "help":
        io.out(HELP[cmd.topic ?? "main"] + "\n");
        return 0;
      case "why": {
        const r = await runWhy(cmd);
        if (r.exitCode === 2) io.err(`error: ${r.text}`);
        else io.out(r.text);
        return r.exitCode;
      }
      case "graph":
      case "check":
      case "verify": {
        const r =
          cmd.name === "graph"
            ? await runGraph(cmd)
            : cmd.name === "check"
              ? await runCheck(cmd)
              : await runVerify(cmd);
        // A note may quote kcp's answer (why a workspace could not be read): one printable line each.
        for (const note of r.notes) io.err(`note: ${printable(note)}\n`);
        io.out(r.text);
        return r.exitCode;
      }
    }
  } catch (err) {
    return failed(err, io, env);
  }
}
