// The plugin's help, written from the commands' contracts: the overview, one page per command whose flags (with their
// defaults) come from the command's flag table, and the same tables in Markdown for docs/plugin.md (a unit test
// holds the docs to them). Nothing here is written twice: change a flag's table and its help and docs follow.
import { flagHelp } from "../cli/kit.ts";
import { COMMANDS } from "./commands.ts";
import { CONNECTION_FLAGS, type CommandFlag, type PluginCommand } from "./contract.ts";

const WIDTH = 118;
const FLAG_COLUMN = 36;

/** Words into lines of at most `width` characters (a longer word stands alone). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return line === "" ? lines : [...lines, line];
}

/** The flags as help lists them: `  -n, --namespace <ns>   what it does (default ...)`, wrapped under the text. */
export function flagLines(flags: readonly CommandFlag[]): string[] {
  const out: string[] = [];
  for (const f of flags) {
    const { left, right } = flagHelp(f);
    const head = `  ${left}`;
    const pad = " ".repeat(FLAG_COLUMN);
    const [first = "", ...rest] = wrap(right, WIDTH - FLAG_COLUMN);
    out.push(head.length < FLAG_COLUMN ? `${head.padEnd(FLAG_COLUMN)}${first}` : `${head}\n${pad}${first}`);
    for (const r of rest) out.push(`${pad}${r}`);
  }
  return out;
}

const connectionHelp = (): string => ["Connection (as kubectl):", ...flagLines(CONNECTION_FLAGS)].join("\n");

function overview(): string {
  const rows = COMMANDS.map((c) => `  ${c.brief.padEnd(41)}${c.summary}`);
  return `kubectl dependencies: what DependencyRules protect, and why a delete is refused.

Commands:
${rows.join("\n")}

Run "kubectl dependencies <command> --help" for a command's flags.

${connectionHelp()}`;
}

function commandPage(c: PluginCommand<unknown>): string {
  const examples = c.examples.map((e) => `  ${e}`).join("\n");
  return `kubectl dependencies ${c.usage}

${c.prose}

Flags:
${flagLines(c.flags).join("\n")}

${connectionHelp()}

${c.examples.length === 1 ? "Example" : "Examples"}:
${examples}`;
}

/** The overview, or the page of the command named. */
export function helpPage(topic?: string): string {
  const c = COMMANDS.find((x) => x.name === topic);
  return c ? commandPage(c) : overview();
}

/** How docs/plugin.md names a flag's type. */
export function typeText(f: CommandFlag): string {
  switch (f.type) {
    case "switch":
      return "switch";
    case "text":
      return "text";
    case "list":
      return "text, repeatable";
    case "format":
      return `one of ${(f.values ?? []).join(", ")}`;
    case "count":
      return `whole number, ${f.min ?? 1} to ${f.max ?? "any"}`;
    case "duration":
      return "duration (30s, 5m, 1h)";
  }
}

/** Markdown keeps `<path>` only inside code: each such word goes in backticks. */
const code = (text: string): string => text.replace(/(\S*<[^>\s]+>\S*)/g, "`$1`");

/** A flag table's rows as docs/plugin.md shows them: flag, type, default, what it does. */
export function docRows(flags: readonly CommandFlag[]): string[][] {
  return flags.map((f) => [
    `\`${flagHelp(f).left}\``,
    typeText(f),
    f.default !== undefined ? `\`${f.default}\`` : (f.defaultText ?? ""),
    code(f.help),
  ]);
}

/** The Markdown table of `flags` (prettier pads it; the docs test compares cells). */
export function docTable(flags: readonly CommandFlag[]): string {
  const rows = [["flag", "type", "default", "what it does"], ["---", "---", "---", "---"], ...docRows(flags)];
  return rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
}
