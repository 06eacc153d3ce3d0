// The verify report as text tables (for people) or JSON (for a periodic job's alerting). Pure. Refusal messages and
// blockers are other tenants' text: the tables make each cell printable, the JSON escapes what JSON.stringify does not.
import { printable, printableJson } from "../../../util/printable.ts";
import type { Blocker } from "../../causes.ts";
import { renderTable } from "../../table.ts";
import { exitCodeOf, type ExpectedBlocker, type Mismatch, type VerifyObject, type VerifyReport } from "./compare.ts";

const objectName = (o: VerifyObject): string => `${o.resource}.${o.group}/${o.name}`;
const who = (b: { kind: string; namespace?: string; name: string }): string =>
  `${b.kind}/${b.namespace ? `${b.namespace}/` : ""}${b.name}`;
const expectedText = (bs: readonly ExpectedBlocker[]): string =>
  bs.map((b) => `${who(b)} (${b.field}, ${b.rule})`).join(", ");
const namedText = (bs: readonly Blocker[]): string =>
  bs.map((b) => `${who(b)}${b.field ? ` (${b.field})` : ""}`).join(", ");

/** One sentence per mismatch: what the rules say against what kcp answered. */
export function explainMismatch(m: Mismatch): string {
  switch (m.kind) {
    case "unprotected":
      return `a delete would be ALLOWED, but the rules say it is referenced by ${expectedText(m.missing)}`;
    case "missing-blockers":
      return `refused, but without naming ${expectedText(m.missing)}`;
    case "stale-blockers":
      return `refused naming ${namedText(m.unexplained)}, which no rule explains`;
    case "blockers-differ":
      return (
        `refused naming ${namedText(m.unexplained)}, which no rule explains, and without naming ` +
        expectedText(m.missing)
      );
  }
}

export function renderText(r: VerifyReport): string {
  const lines = [
    `verified ${r.checked} object(s) in ${printable(r.workspace)} against ${r.rules.length} DependencyRule(s): ` +
      `${r.referenced} referenced, each dry-run deleted (nothing was deleted)`,
    "",
  ];
  if (r.mismatches.length === 0) lines.push("no mismatches: every refusal names exactly the blockers the rules expect");
  else
    lines.push(
      `MISMATCHES (${r.mismatches.length}): protection differs from the rules`,
      "",
      renderTable(
        ["namespace", "object", "problem", "detail"],
        r.mismatches.map((m) => [m.object.namespace ?? "", objectName(m.object), m.kind, explainMismatch(m)]),
      ).trimEnd(),
    );
  if (r.unverified.length > 0)
    lines.push(
      "",
      `could not verify ${r.unverified.length} object(s): the dry run answered neither "allowed" nor a refusal naming blockers`,
      "",
      renderTable(
        ["namespace", "object", "status", "message"],
        r.unverified.map((u) => [u.object.namespace ?? "", objectName(u.object), String(u.status), u.message]),
      ).trimEnd(),
    );
  return lines.join("\n") + "\n";
}

/** The JSON document `-o json` prints: the report plus `passed` and the exit code it leads to. */
export function renderJson(r: VerifyReport): string {
  const code = exitCodeOf(r);
  return printableJson({ ...r, passed: code === 0, exitCode: code }) + "\n";
}
