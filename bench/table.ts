// Plain-text tables and the number formats the report's tables share.
import type { Summary } from "./stats.ts";

export const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : "–");
export const x = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "–");

/** A plain-text table; the first `left` columns are left-aligned, the rest (figures) right-aligned. */
export function table(headers: string[], rows: string[][], left = 2): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i < left ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(headers), rule.trimEnd(), ...rows.map(line)].join("\n");
}

export const sumRow = (n: string, what: string, s: Summary): string[] => [
  n,
  what,
  String(s.n),
  f(s.p50),
  f(s.p95),
  f(s.p99),
  f(s.mean),
];

/** One row of the targets table: a figure per lookup mode against its goal. */
export interface TargetRow {
  target: string;
  index: string;
  live: string;
  goal: string;
  /** Index mode against the goal: "met", "MISSED", or "–" when there is no figure (or no goal). */
  verdict: string;
}
