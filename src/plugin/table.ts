// Tables as kubectl prints them: upper-case headers, columns padded with three spaces, no trailing blanks.

export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map((r) => line(headers.map((_, i) => r[i] ?? "")))]
    .join("\n")
    .concat("\n");
}
