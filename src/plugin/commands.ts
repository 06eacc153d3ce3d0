// Every subcommand of the plugin, in the order the overview lists them. A new command is a folder under commands/
// exporting one PluginCommand, and one line here.
import type { PluginCommand } from "./contract.ts";
import { check, type CheckCommand } from "./commands/check/command.ts";
import { graph, type GraphCommand } from "./commands/graph/command.ts";
import { teardown, type TeardownCommand } from "./commands/teardown/command.ts";
import { verify, type VerifyCommand } from "./commands/verify/command.ts";
import { why, type WhyCommand } from "./commands/why/command.ts";

/** What a command line asks for: help, or one command with its flags read. */
export type Command =
  { name: "help"; topic?: string } | WhyCommand | GraphCommand | CheckCommand | TeardownCommand | VerifyCommand;

export const COMMANDS: readonly PluginCommand<Command>[] = [why, graph, check, teardown, verify] as const;
