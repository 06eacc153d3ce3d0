// verify's command line as the plugin's args.ts wires it: the flags it takes besides the common ones, and the
// command read from what the kit found. Kept here so that args.ts only lists it.
import type { Flag, GivenArgs } from "../../cli/kit.ts";

export type VerifyFormat = "text" | "json";
export const VERIFY_FORMATS: readonly VerifyFormat[] = ["text", "json"];

export interface VerifyCommand {
  name: "verify";
  format: VerifyFormat;
  /** Workspaces to read rules from; empty: every readable workspace below `root`. */
  ruleWorkspaces: string[];
  connection: { kubeconfig?: string; context?: string; workspace?: string };
}

export const VERIFY_FLAGS: readonly Flag[] = [
  { name: "output", short: "o", arg: "<format>", help: "text or json" },
  { name: "rule-workspace", arg: "<path>", help: "a workspace to read DependencyRules from (repeatable)" },
];

/** The command, or what is wrong with the flags. */
export function verifyCommandOf(
  given: GivenArgs,
  connection: VerifyCommand["connection"],
): { command: VerifyCommand } | { error: string } {
  const format = given.values.get("output")?.at(-1) ?? "text";
  if (!VERIFY_FORMATS.includes(format as VerifyFormat))
    return { error: `-o ${format}: verify's output format is one of ${VERIFY_FORMATS.join(", ")}` };
  const ruleWorkspaces = given.values.get("rule-workspace") ?? [];
  return { command: { name: "verify", format: format as VerifyFormat, ruleWorkspaces, connection } };
}
