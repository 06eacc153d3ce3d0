// The help pages and docs/plugin.md against the commands' flag tables: every page lists exactly its command's flags (and the connection
// flags), each with the default its table gives, which is the default parse uses. The pages are read as text, the
// way a user reads them, so a page written apart from the table (as teardown's once was, saying "default 8" while
// the code used 32) fails here. docs/plugin.md's flag tables must have the same rows as the tables.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { COMMANDS } from "../../src/plugin/commands.ts";
import { CONNECTION_FLAGS, type CommandFlag } from "../../src/plugin/contract.ts";
import { docRows, docTable, helpPage } from "../../src/plugin/help.ts";
import { parseArgs } from "../../src/plugin/main.ts";

interface Row {
  short?: string;
  name: string;
  text: string;
}

/** The rows of a page's section (`Flags:`, `Connection (as kubectl):`), continuation lines joined to their flag. */
function sectionRows(page: string, heading: string): Row[] {
  const lines = page.split("\n");
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `no "${heading}" section`);
  const rows: Row[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === "") break;
    const m = /^ {2}(?:-(\w), )?--([a-z-]+)(.*)$/.exec(line);
    if (m) rows.push({ ...(m[1] ? { short: m[1] } : {}), name: m[2]!, text: m[3]!.trim() });
    else rows.at(-1)!.text += ` ${line.trim()}`;
  }
  return rows;
}

function assertListsExactly(rows: Row[], flags: readonly CommandFlag[], where: string): void {
  assert.deepEqual(
    rows.map((r) => `${r.short ?? ""}/${r.name}`),
    flags.map((f) => `${f.short ?? ""}/${f.name}`),
    `${where}: the flags listed`,
  );
  for (const [i, f] of flags.entries()) {
    const text = rows[i]!.text;
    const def = f.default ?? f.defaultText;
    if (def === undefined) assert.doesNotMatch(text, /\(default /, `${where} --${f.name}: no default`);
    else assert.ok(text.includes(`(default ${def})`), `${where} --${f.name}: "(default ${def})" in "${text}"`);
  }
}

describe("help pages against the flag tables", () => {
  for (const c of COMMANDS)
    it(`${c.name} --help lists exactly its flags, with their defaults, and the connection flags`, () => {
      const page = helpPage(c.name);
      assertListsExactly(sectionRows(page, "Flags:"), c.flags, c.name);
      assertListsExactly(sectionRows(page, "Connection (as kubectl):"), CONNECTION_FLAGS, c.name);
    });

  it("the overview lists every command and the connection flags", () => {
    const page = helpPage();
    for (const c of COMMANDS)
      assert.match(page, new RegExp(`^ {2}${c.name}\\b.*${c.summary.replace(/[()]/g, ".")}`, "m"));
    assertListsExactly(sectionRows(page, "Connection (as kubectl):"), CONNECTION_FLAGS, "overview");
  });

  it("the defaults help states are those parse uses (teardown's concurrency and timeout, every -o)", () => {
    const r = parseArgs(["teardown", "-n", "x", "--plan"]);
    assert.ok(r.ok && r.command.name === "teardown");
    assert.equal(r.command.concurrency, 32);
    assert.equal(r.command.timeoutMs, 600_000);
    assert.match(helpPage("teardown"), /--concurrency <n> +.*\(default 32\)/);
    assert.match(helpPage("teardown"), /--timeout <duration> +.*\(default 10m\)/);
    for (const [argv, format] of [
      [["graph"], "mermaid"],
      [["verify"], "text"],
      [["teardown", "-n", "x", "--plan"], "table"],
    ] as const) {
      const p = parseArgs(argv);
      assert.ok(p.ok && "format" in p.command && p.command.format === format, argv.join(" "));
      assert.match(helpPage(argv[0]), new RegExp(`-o, --output <format> .*\\(default ${format}\\)`));
    }
  });
});
/** The cells of the Markdown table after `<!-- flags: name -->` in docs/plugin.md (header and rule dropped). */
function docsTable(docs: string, name: string): string[][] {
  const marker = `<!-- flags: ${name} -->`;
  const at = docs.indexOf(marker);
  assert.ok(at >= 0, `docs/plugin.md has no ${marker}`);
  const lines = docs
    .slice(at + marker.length)
    .trimStart()
    .split("\n");
  const table = lines.slice(
    0,
    lines.findIndex((l) => !l.startsWith("|")),
  );
  return table.slice(2).map((l) =>
    l
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim()),
  );
}

describe("docs/plugin.md's flag tables against the same tables", () => {
  const docs = readFileSync(new URL("../../docs/plugin.md", import.meta.url), "utf8");
  for (const [name, flags] of [
    ["connection", CONNECTION_FLAGS] as const,
    ...COMMANDS.map((c) => [c.name, c.flags] as const),
  ])
    it(`${name}: the docs' table has the table's rows`, () => {
      assert.deepEqual(docsTable(docs, name), docRows(flags), `expected in docs/plugin.md:\n${docTable(flags)}\n`);
    });
});
