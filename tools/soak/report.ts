// The run's summary: operations by kind and outcome, faults, the measured window, violations per invariant and the
// races inside the window, with the headline `0 violations in N operations, M faults`.
import type { CheckResult, Invariant } from "./checker.ts";
import type { History, OpRecord } from "./history.ts";
import { DELETES } from "./invariants/refusals.ts";

/** A delete's 409 is the webhook's denial; any other request's 409 is a conflict (the object exists already). */
export function outcome(op: OpRecord): "allowed" | "denied" | "conflict" | "not found" | "errored" {
  if (op.status >= 200 && op.status < 300) return "allowed";
  if (op.status === 409) return DELETES.has(op.kind) ? "denied" : "conflict";
  if (op.status === 404) return "not found";
  return "errored";
}

const quantile = (sorted: number[], q: number): number =>
  sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);

export function headline(h: History, r: CheckResult): string {
  return (
    `${r.violations.length} violations in ${h.ops.length} operations, ${h.faults.length} faults, ` +
    `${h.hostile?.length ?? 0} hostile episodes`
  );
}

/** Faults by kind, the careless author's by flavour too. */
function faultsLine(h: History): string {
  const faults = new Map<string, number>();
  const flavours = new Map<string, number>();
  for (const f of h.faults) {
    faults.set(f.kind, (faults.get(f.kind) ?? 0) + 1);
    if (f.flavour) flavours.set(f.flavour, (flavours.get(f.flavour) ?? 0) + 1);
  }
  const by = (m: Map<string, number>): string => [...m].map(([k, n]) => `${k} ${n}`).join(", ");
  const careless = flavours.size > 0 ? ` (careless flavours: ${by(flavours)})` : "";
  return `faults: ${by(faults) || "none"}${careless}`;
}

/** The hostile consumer's episodes, and the refusals I5 judged and excused. */
function hostileLines(h: History, r: CheckResult): string[] {
  const episodes = h.hostile ?? [];
  const overloads = episodes.filter((e) => e.overloaded.length > 0).length;
  const lines = [
    `hostile episodes: ${episodes.filter((e) => e.kind === "dependents").length} dependents (${overloads} over the ` +
      `index's names cap or budget), ${episodes.filter((e) => e.kind === "slow-uploads").length} slow uploads; ` +
      `${r.checkedHostile} deletes answered while one was under way with no fault to excuse a refusal ` +
      `(${r.checkedSlowUploads} during slow uploads)`,
  ];
  for (const e of episodes.filter((x) => x.kind !== "provider").slice(0, 6)) lines.push(`  ${e.kind}: ${e.detail}`);
  lines.push(...providerLines(h, r));
  lines.push(
    `refused without a verdict: ${Object.entries(r.refused)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}; ${r.excusedHostile} of them the hostile consumer's own (its workspace, the types it overloaded)`,
  );
  return lines;
}

/** The hostile provider's episodes, how kcp answered its writes, and its listener's connections (I6). */
function providerLines(h: History, r: CheckResult): string[] {
  const episodes = (h.hostile ?? []).filter((e) => e.kind === "provider");
  const writes = (kind: string): string => {
    const ops = h.ops.filter((op) => op.kind === kind);
    const by = new Map<number, number>();
    for (const op of ops) by.set(op.status, (by.get(op.status) ?? 0) + 1);
    return `${ops.length} (${[...by].map(([status, n]) => `${status}: ${n}`).join(", ") || "none"})`;
  };
  const lines = [
    `hostile provider: ${episodes.length} episodes; status forgeries ${writes("forge-status")}, slice rewrites ` +
      `${writes("forge-slice")}; ${r.checkedProvider} deletes answered while one was under way with no fault to ` +
      `excuse a refusal; its listener accepted ${h.tenantConnections ?? 0} connections`,
  ];
  for (const e of episodes.slice(0, 4)) lines.push(`  provider: ${e.detail}`);
  return lines;
}

export function summary(h: History, r: CheckResult): string {
  const lines: string[] = [];
  lines.push(
    `soak: seed ${h.seed}, ${Math.round((h.endedAt - h.startedAt) / 1000)} s, ${h.mode}${h.weakened ? ", WEAKENED BUILD" : ""}` +
      (h.statusReadBack ? ", WEAKENED BUILD (rule status read back)" : "") +
      (h.statusPolicyOff ? ", dep-ctrl export without its maximal permission policy" : ""),
  );
  const byKind = new Map<string, Record<string, number>>();
  for (const op of h.ops) {
    const row = byKind.get(op.kind) ?? {};
    const o = outcome(op);
    row[o] = (row[o] ?? 0) + 1;
    byKind.set(op.kind, row);
  }
  lines.push(
    "operations (ok: 2xx; denied: a delete refused with 409; conflict: 409 on anything else; errored: 5xx, 403, no answer):",
  );
  for (const [kind, row] of [...byKind].sort()) {
    const total = Object.values(row).reduce((a, b) => a + b, 0);
    lines.push(
      `  ${kind.padEnd(18)} ${String(total).padStart(6)}  ok ${row["allowed"] ?? 0}, denied ${row["denied"] ?? 0}, ` +
        `conflict ${row["conflict"] ?? 0}, not found ${row["not found"] ?? 0}, errored ${row["errored"] ?? 0}`,
    );
  }
  lines.push(faultsLine(h), ...localTargetLines(h, r));
  lines.push(...hostileLines(h, r));
  const w = h.window.map((s) => s.visibleAfterMs).sort((a, b) => a - b);
  lines.push(
    `window: a new VM named in a denial by a request sent p50 ${quantile(w, 0.5)} ms after its create was answered, p95 ${quantile(w, 0.95)} ms, ` +
      `max ${w.at(-1) ?? NaN} ms (${w.length} samples); the checker allows ${h.windowMs} ms` +
      ((w.at(-1) ?? 0) > h.windowMs ? " — MEASURED MAX EXCEEDS THE ALLOWED WINDOW" : ""),
  );
  lines.push(
    `checked: ${r.checkedDeletes} dependency deletes (${r.deletedWithWorkspace} more went with their workspace), ` +
      `${r.checkedDenials} denials, ${r.checkedWhileDown} protected deletes while the webhook was down, ` +
      `${r.refusedUnavailable} deletes refused 503 and ${r.checkedCollateral} deletes answered while the careless rule ` +
      `stood with no other fault to excuse a 503; watch events ${h.watches.length}, watch gaps ${h.gaps.length}`,
  );
  const toReady = ruleChangeToReady(h).sort((a, b) => a - b);
  lines.push(
    `rule changes: ${toReady.length} applied; Ready again (status for the new generation) after p50 ` +
      `${quantile(toReady, 0.5)} ms, max ${toReady.at(-1) ?? NaN} ms` +
      (toReady.some((t) => !Number.isFinite(t)) ? " (some never within the run)" : ""),
  );
  lines.push(
    `rules Ready: ${Object.entries(r.readyShare)
      .map(([rule, share]) => `${rule} ${Math.round(share * 100)}% of the run`)
      .join(", ")}`,
  );
  for (const inv of ["I1", "I2", "I3", "I4", "I5", "I6"] as Invariant[]) {
    const v = r.violations.filter((x) => x.invariant === inv);
    const races = r.races.filter((x) => x.invariant === inv);
    lines.push(`${inv}: ${v.length} violations, ${races.length} races inside the window`);
    for (const x of v.slice(0, 20)) lines.push(`  VIOLATION ${x.message}`);
    for (const x of races.slice(0, 5)) lines.push(`  race ${x.message}`);
  }
  for (const g of h.gaps.slice(0, 10)) lines.push(`watch gap on ${g.shard}: ${g.what}`);
  lines.push(headline(h, r));
  return lines.join("\n");
}

/** ms from each applied rule change to the first watch event showing the rule Ready for its new generation. */
function ruleChangeToReady(h: History): number[] {
  const out: number[] = [];
  const churns = h.ops.filter((op) => op.kind === "rule-churn");
  for (const op of churns) {
    if (op.status < 200 || op.status >= 300 || op.name.endsWith(":delete")) continue;
    // Events up to the next change of the same rule: an apply that changed nothing has none of its own.
    const rule = op.name.split(":")[0];
    const next = churns.find((o) => o.sentAt > op.sentAt && o.name.split(":")[0] === rule)?.sentAt ?? Infinity;
    const after = h.watches.filter(
      (w) => w.name === rule && w.recvAt >= op.sentAt && w.recvAt < next && w.resource.startsWith("dependencyrules."),
    );
    if (after.length === 0) continue; // the apply changed nothing (same shape as before)
    const ready = after.find((w) => {
      const gen = (w.object["metadata"] as { generation?: number } | undefined)?.generation;
      const conds = (w.object["status"] as { conditions?: Record<string, unknown>[] } | undefined)?.conditions ?? [];
      const c = conds.find((x) => x["type"] === "Ready");
      return w.type !== "DELETED" && c?.["status"] === "True" && c["observedGeneration"] === gen;
    });
    out.push(ready ? ready.recvAt - op.answeredAt : Number.POSITIVE_INFINITY);
  }
  return out;
}

/** Per local-target export, the deletes of the core types in the consumers that accepted its claim and declined it. */
export function localTargetLines(h: History, r: CheckResult): string[] {
  const lines: string[] = [];
  for (const consent of h.localTargets ?? []) {
    const tally = (clusters: string[]): string => {
      const row: Record<string, number> = {};
      const ops = h.ops.filter(
        (op) => DELETES.has(op.kind) && !op.resource.includes(".") && clusters.includes(op.cluster),
      );
      for (const op of ops) row[outcome(op)] = (row[outcome(op)] ?? 0) + 1;
      const by = Object.entries(row).map(([k, n]) => `${k} ${n}`);
      return `${ops.length} deletes (${by.join(", ") || "none"})`;
    };
    lines.push(
      `local targets of ${consent.export}: ${tally(consent.accepted)} in ${consent.accepted.length} consumers that ` +
        `accepted its claim; ${tally(consent.declined)} in ${consent.declined.length} that declined ` +
        `(${r.checkedDeclined} judged: none may reach the webhook)`,
    );
  }
  return lines;
}
