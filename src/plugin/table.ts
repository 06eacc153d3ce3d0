// Tables as kubectl prints them: upper-case headers, columns padded with three spaces, no trailing blanks. Cells are
// mostly what others wrote (names, status messages, refusals), so each is made printable: a cell is one line.
import { printable } from "../util/printable.ts";

export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const head = headers.map((h) => printable(h.toUpperCase()));
  const body = rows.map((r) => headers.map((_, i) => printable(r[i] ?? "")));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(head), ...body.map(line)].join("\n").concat("\n");
}
