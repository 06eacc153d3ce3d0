// The end of a teardown run, pure: what was done, and for each object still there, why (its finalizers when it is
// Terminating, with who usually removes each and since when, the blockers that still reference it, a delete refused
// for another reason, a cycle). One model, shown as text (the run's stdout) and as JSON with -o json (the schema is in
// docs/operations.md). Names, finalizers and refusals are other tenants' text: the table makes each cell printable,
// the JSON escapes what JSON.stringify leaves. Finalizer owners come from the one table why uses (finalizers.ts).
import { printable, printableJson } from "../../../util/printable.ts";
import { age, finalizerOwner, secondsSince, type FinalizerOwner } from "../../finalizers.ts";
import { renderTable } from "../../table.ts";
import type { ExecuteReport } from "./execute.ts";
import type { PlanObject, StuckReason } from "./plan.ts";
import { cycleHints, display, documentHead, where, type PlanContext } from "./render.ts";

export const REPORT_KIND = "TeardownReport";

/**
 * Why an object is still there. terminating: its delete was accepted, finalizers (or the deletion itself) still hold
 * it; failed: its delete was refused for another reason than a blocker; blocked: dependents its last refusal named
 * still exist; not-reached: the run ended (--timeout) before its turn; the rest are the plan's reasons.
 */
export type LeftReason = "terminating" | "failed" | "blocked" | "not-reached" | StuckReason;

export interface LeftObject {
  id: string;
  kind: string;
  namespace?: string;
  name: string;
  reason: LeftReason;
  /** One sentence: the finalizers, the blockers, the refusal, the cycle. */
  detail: string;
  finalizers: string[];
  /** Ids of the objects still there that its last refusal named as blockers. */
  blockedBy: string[];
  /** Set when reason is terminating: since when, and each finalizer with who usually removes it (finalizers.ts). */
  terminating?: HeldSince;
}

export interface HeldSince {
  /** metadata.deletionTimestamp, when kcp showed one. */
  since?: string;
  /** Whole seconds from `since` to the report's clock. */
  ageSeconds?: number;
  finalizers: (FinalizerOwner & { name: string })[];
}

export interface TeardownReport {
  /** Nothing is left. */
  complete: boolean;
  deleted: number;
  refusedDeletes: number;
  rounds: number;
  elapsedMs: number;
  problem?: string;
  left: LeftObject[];
  /** The cycles among what is left, each with the --skip-protection that would break it. */
  cycles: string[][];
}

/** The finalizers of an object being deleted, each with its usual owner, and since when (by `nowMs`). */
function heldSince(o: PlanObject, nowMs: number): HeldSince {
  const ageSeconds = o.deletionTimestamp !== undefined ? secondsSince(o.deletionTimestamp, nowMs) : undefined;
  return {
    ...(o.deletionTimestamp !== undefined ? { since: o.deletionTimestamp } : {}),
    ...(ageSeconds !== undefined ? { ageSeconds } : {}),
    finalizers: o.finalizers.map((name) => ({ name, ...finalizerOwner(name) })),
  };
}

/** `Terminating, held by finalizer(s) a, b; a → its owner; b → its owner; since <time> (5m ago)`. */
function terminatingDetail(h: HeldSince): string {
  const names = h.finalizers.map((f) => f.name);
  const head =
    names.length > 0
      ? [`Terminating, held by finalizer(s) ${names.join(", ")}`, ...h.finalizers.map((f) => `${f.name} → ${f.owner}`)]
      : ["Terminating, no finalizer left: deletion still in progress"];
  const ago = h.ageSeconds !== undefined ? ` (${age(h.ageSeconds)} ago)` : "";
  return [...head, ...(h.since !== undefined ? [`since ${h.since}${ago}`] : [])].join("; ");
}

type Why = Pick<LeftObject, "reason" | "detail" | "terminating">;

/** The one place that decides why an object is left: Terminating first, then a refusal, the plan, its blockers. */
function why(o: PlanObject, r: ExecuteReport, name: (id: string) => string, nowMs: number): Why {
  if (o.deleting) {
    const terminating = heldSince(o, nowMs);
    return { reason: "terminating", detail: terminatingDetail(terminating), terminating };
  }
  const failure = r.failures.get(o.id);
  if (failure !== undefined) return { reason: "failed", detail: failure };
  const stuck = r.plan?.stuck.find((s) => s.id === o.id);
  if (stuck) return { reason: stuck.reason, detail: stuck.detail.replace(/[^ ,→]+\/[^ ,→]*\/[^ ,→]+/g, name) };
  const by = r.blockedBy.get(o.id) ?? [];
  if (by.length > 0) return { reason: "blocked", detail: `still referenced by ${by.map(name).join(", ")}` };
  return { reason: "not-reached", detail: "the run ended before its turn" };
}

/** `nowMs`: when the report is made (the run's clock), for how long Terminating objects have been held. */
export function teardownReport(r: ExecuteReport, nowMs: number): TeardownReport {
  const byId = new Map(r.left.map((o) => [o.id, o]));
  const name = (id: string): string => {
    const o = byId.get(id);
    return o ? display(o) : id;
  };
  const left = [...r.left]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((o): LeftObject => {
      const { terminating, ...w } = why(o, r, name, nowMs);
      return {
        id: o.id,
        kind: o.kind,
        ...(o.namespace ? { namespace: o.namespace } : {}),
        name: o.name,
        ...w,
        finalizers: o.finalizers,
        blockedBy: r.blockedBy.get(o.id) ?? [],
        ...(terminating ? { terminating } : {}),
      };
    });
  return {
    complete: r.left.length === 0,
    deleted: r.deleted,
    refusedDeletes: r.refusedDeletes,
    rounds: r.waves.length,
    elapsedMs: r.elapsedMs,
    ...(r.problem !== undefined ? { problem: r.problem } : {}),
    left,
    cycles: r.plan?.cycles ?? [],
  };
}

/** The report for people: one line when done; else the reason, the counts, and a row per object left. */
export function reportText(r: ExecuteReport, ctx: PlanContext, nowMs: number): string {
  const rep = teardownReport(r, nowMs);
  const secs = (rep.elapsedMs / 1000).toFixed(1);
  const counts = `${rep.deleted} object(s) deleted in ${rep.rounds} round(s), ${rep.refusedDeletes} delete(s) refused, ${secs}s`;
  if (rep.complete) return `teardown of ${where(ctx)} done: ${counts}\n`;
  const lines = [`teardown of ${where(ctx)} NOT finished: ${printable(rep.problem ?? "objects left")}`, counts, ""];
  lines.push(`${rep.left.length} object(s) left, and why:`, "");
  const rows = rep.left.map((o) => [display(o), o.reason, o.detail]);
  lines.push(renderTable(["object", "why", "detail"], rows).trimEnd());
  if (r.plan && rep.cycles.length > 0) lines.push(cycleHints(r.plan).trimEnd());
  return lines.join("\n") + "\n";
}

/** The report for UIs and automation. */
export function reportJson(r: ExecuteReport, ctx: PlanContext, nowMs: number): string {
  const rep = teardownReport(r, nowMs);
  const doc = {
    ...documentHead(REPORT_KIND, ctx),
    complete: rep.complete,
    deleted: rep.deleted,
    refusedDeletes: rep.refusedDeletes,
    rounds: rep.rounds,
    elapsedSeconds: Math.round(rep.elapsedMs) / 1000,
    problem: rep.problem ?? null,
    left: rep.left,
    cycles: rep.cycles,
  };
  return printableJson(doc) + "\n";
}
