// Table 2b and its targets: teardown with a slow backend (finalizer-teardown.ts), three ways side by side.
import type { FinalizerTeardownRow, Scope } from "./finalizer-teardown.ts";
import { f, table, x, type TargetRow } from "./table.ts";

const STRATEGY_TEXT = {
  kcp: "kcp's own deletion, no protection",
  "kcp-protected": "kcp's own deletion, protection on",
  "teardown-protected": "kubectl dependencies teardown, protection on",
} as const;

const baseline = (rows: readonly FinalizerTeardownRow[], scope: Scope): FinalizerTeardownRow | undefined =>
  rows.find((r) => r.scope === scope && r.strategy === "kcp");
const s = (ms: number | undefined): string => (ms === undefined ? "–" : f(ms / 1000, 2));

export function finalizerTeardownTable(rows: readonly FinalizerTeardownRow[]): string {
  const body = rows.map((r) => [
    r.scope,
    STRATEGY_TEXT[r.strategy],
    s(r.wallMs),
    x(r.wallMs / (baseline(rows, r.scope)?.wallMs ?? NaN)),
    s(r.planMs),
    r.planDryRuns === undefined ? "–" : String(r.planDryRuns),
    s(r.teardownMs),
    r.waves === undefined ? "–" : String(r.waves),
    String(r.refusedDeletes),
    String(r.webhookDenials),
    String(r.ordering.violations),
    `${r.ordering.unobserved}/${r.ordering.objects}`,
    String(r.finalizersCleared),
    r.error ? `ERROR: ${r.error}` : r.gaps.length > 0 ? `${r.gaps.length} watch gap(s)` : "",
  ]);
  const first = rows[0];
  return [
    table(
      [
        "scope",
        "how",
        "gone after s",
        "vs kcp, no protection",
        "plan s",
        "plan dry runs",
        "teardown run s",
        "waves",
        "refused deletes",
        "webhook denials",
        "ordering violations",
        "unseen deletions",
        "finalizers cleared",
        "",
      ],
      body,
    ),
    first
      ? `${first.pairs} VPC/VM pairs, each VM holding a finalizer the simulated backend clears ` +
        `${f(first.finalizerMs / 1000)} s after its delete; lookup=${first.mode}. Ordering violation: a VPC deleted ` +
        "while a VM naming it still existed (kcp's watch history, ordered by resourceVersion). Refused deletes: the " +
        "webhook's denials of kcp's deleter; for teardown, its own refused real deletes (the run sends no dry run; " +
        "the plan's refused dry runs are in the webhook denials). Plan: bound types, the rules, list and a dry run " +
        "of each object of a type some rule protects, timed once before the run"
      : "no rows",
  ].join("\n");
}

const verdict = (v: number, ok: (v: number) => boolean): string =>
  Number.isFinite(v) ? (ok(v) ? "met" : "MISSED") : "–";

/** The targets of 2b, figures in the column of the lookup mode they ran in. */
export function finalizerTargetRows(rows: readonly FinalizerTeardownRow[] | undefined): TargetRow[] {
  if (!rows || rows.length === 0) return [];
  const mode = rows[0]!.mode;
  const cell = (text: string): Pick<TargetRow, "index" | "live"> =>
    mode === "index" ? { index: text, live: "–" } : { index: "–", live: text };
  const at = (scope: Scope, strategy: FinalizerTeardownRow["strategy"]) =>
    rows.find((r) => r.scope === scope && r.strategy === strategy);
  const size = `${rows[0]!.pairs} pairs, ${f(rows[0]!.finalizerMs / 1000)} s finalizer`;
  const out: TargetRow[] = [];
  for (const scope of ["namespace", "workspace"] as const) {
    const td = at(scope, "teardown-protected");
    const off = at(scope, "kcp");
    const ratio = td && off && !td.error ? td.wallMs / off.wallMs : NaN;
    out.push({
      target: `(f) ${scope} teardown, ${size}: teardown with protection / kcp without`,
      ...cell(td && off ? `${x(ratio)} (${s(td.wallMs)} s / ${s(off.wallMs)} s)` : "–"),
      goal: "≤ 1.30×",
      verdict: verdict(ratio, (v) => v <= 1.3),
    });
  }
  const protectedRows = rows.filter((r) => r.strategy !== "kcp");
  const violations = protectedRows.reduce((a, r) => a + r.ordering.violations, 0);
  const unseen = protectedRows.reduce((a, r) => a + r.ordering.unobserved, 0);
  const list = (rs: FinalizerTeardownRow[]) => rs.map((r) => `${r.scope} ${r.ordering.violations}`).join(", ");
  out.push({
    target: "(f) ordering violations with protection (kcp's deleter and teardown)",
    ...cell(`${violations} (${list(protectedRows)})${unseen > 0 ? `; ${unseen} deletions unseen` : ""}`),
    goal: "0",
    verdict: verdict(unseen > 0 ? NaN : violations, (v) => v === 0),
  });
  out.push({
    target: "(f) ordering violations without protection (counted)",
    ...cell(list(rows.filter((r) => r.strategy === "kcp"))),
    goal: "(report)",
    verdict: "–",
  });
  for (const scope of ["namespace", "workspace"] as const) {
    const plan = at(scope, "teardown-protected")?.planMs;
    if (plan === undefined) continue;
    out.push({
      target: `(f) teardown plan, ${rows[0]!.pairs} pairs (${scope === "namespace" ? "one namespace" : "a workspace"})`,
      ...cell(`${s(plan)} s`),
      goal: "< 10 s",
      verdict: verdict(plan, (v) => v < 10_000),
    });
  }
  return out;
}
