// A teardown plan as a table for people and as JSON for UIs and automation (the schema is in docs/operations.md);
// the report of a run is in report.ts. Pure. Names, finalizers and refusal messages are other tenants' text:
// tables make each cell printable, the other lines that quote them call printable(), and the JSON escapes what
// JSON.stringify does not.
import { SKIP_PROTECTION_ANNOTATION } from "../../../api/types.ts";
import { printable, printableJson } from "../../../util/printable.ts";
import { renderTable } from "../../table.ts";
import { push, type Plan, type PlanObject } from "./plan.ts";

export const PLAN_API_VERSION = "dependencies.opendefense.cloud/v1alpha1";
export const PLAN_KIND = "TeardownPlan";

export interface PlanContext {
  workspace: string;
  /** Undefined for a whole-workspace teardown. */
  namespace?: string;
}

/** `VirtualMachine/default/vm-1`, or `Zone/eu-1` for a cluster-scoped object. */
export const display = (o: Pick<PlanObject, "kind" | "namespace" | "name">): string =>
  o.namespace ? `${o.kind}/${o.namespace}/${o.name}` : `${o.kind}/${o.name}`;

function lookup(plan: Plan): (id: string) => string {
  const byId = new Map(plan.objects.map((o) => [o.id, o]));
  return (id) => {
    const o = byId.get(id);
    return o ? display(o) : id;
  };
}

function waveOf(plan: Plan): Map<string, number> {
  return new Map(plan.waves.flatMap((w, i) => w.map((id) => [id, i] as const)));
}

function blockedBy(plan: Plan): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of plan.edges) push(out, e.to, e.from);
  return out;
}

/** The head both teardown documents (the plan, the run's report) start with. */
export const documentHead = (kind: string, ctx: PlanContext) => ({
  apiVersion: PLAN_API_VERSION,
  kind,
  workspace: ctx.workspace,
  namespace: ctx.namespace ?? null,
});

export function planJson(plan: Plan, ctx: PlanContext): string {
  const wave = waveOf(plan);
  const by = blockedBy(plan);
  const doc = {
    ...documentHead(PLAN_KIND, ctx),
    complete: plan.stuck.length === 0,
    objects: plan.objects.map((o) => ({
      id: o.id,
      group: o.group,
      version: o.version,
      resource: o.resource,
      kind: o.kind,
      ...(o.namespace ? { namespace: o.namespace } : {}),
      name: o.name,
      wave: wave.get(o.id) ?? null,
      blockedBy: (by.get(o.id) ?? []).sort(),
      finalizers: o.finalizers,
      deleting: o.deleting,
      skipProtection: o.skipProtection,
      named: o.named === true,
    })),
    waves: plan.waves,
    edges: plan.edges,
    cycles: plan.cycles,
    needsSkipProtection: plan.needsSkipProtection,
    stuck: plan.stuck,
    finalizerHolds: plan.finalizerHolds,
  };
  return printableJson(doc) + "\n";
}

/** `root:consumer1, namespace default`, printable. */
export const where = (ctx: PlanContext): string =>
  printable(`${ctx.workspace}${ctx.namespace ? `, namespace ${ctx.namespace}` : ""}`);

/** What cannot be deleted in any order, and what to do about it. */
export function stuckText(plan: Plan): string {
  if (plan.stuck.length === 0) return "";
  const name = lookup(plan);
  const lines = [`${plan.stuck.length} object(s) cannot be deleted in any order:`, ""];
  const rows = plan.stuck.map((s) => [name(s.id), s.reason, s.detail.replace(/[^ ,→]+\/[^ ,→]*\/[^ ,→]+/g, name)]);
  lines.push(renderTable(["object", "reason", "detail"], rows).trimEnd());
  return lines.join("\n") + "\n" + cycleHints(plan);
}

/** Each cycle, and the --skip-protection that breaks it. */
export function cycleHints(plan: Plan): string {
  const name = lookup(plan);
  const lines: string[] = [];
  for (const c of plan.cycles)
    lines.push(
      "",
      `cycle: ${printable(c.map(name).join(" → "))}`,
      `  break it by allowing skip-protection on one of them, e.g.: --skip-protection ${printable(skipSpec(plan, c[0]!))}`,
      `  (the plugin then sets ${SKIP_PROTECTION_ANNOTATION}=true on that object before deleting it)`,
    );
  return lines.length > 0 ? lines.join("\n") + "\n" : "";
}

function skipSpec(plan: Plan, id: string): string {
  const o = plan.objects.find((x) => x.id === id);
  if (!o) return id;
  const type = o.group ? `${o.resource}.${o.group}` : o.resource;
  return o.namespace ? `${type}/${o.namespace}/${o.name}` : `${type}/${o.name}`;
}

export function planTable(plan: Plan, ctx: PlanContext): string {
  const wave = waveOf(plan);
  const by = blockedBy(plan);
  const name = lookup(plan);
  const head = `teardown plan for ${where(ctx)}: ${plan.objects.length} object(s) in ${plan.waves.length} wave(s)`;
  if (plan.objects.length === 0) return `${head}; nothing to delete\n`;
  const order = [...plan.objects].sort((a, b) => (wave.get(a.id) ?? 1e9) - (wave.get(b.id) ?? 1e9));
  const rows = order.map((o) => [
    wave.has(o.id) ? String(wave.get(o.id)! + 1) : "-",
    o.kind,
    o.namespace ?? "",
    o.name,
    (by.get(o.id) ?? []).map(name).join(",") || "",
    [o.deleting ? "(deleting)" : "", ...o.finalizers].filter(Boolean).join(","),
  ]);
  const table = renderTable(["wave", "kind", "namespace", "name", "blocked by", "finalizers"], rows);
  const stuck = stuckText(plan);
  const holds =
    plan.finalizerHolds.length > 0
      ? `\n${plan.finalizerHolds.length} object(s) have finalizers: their delete is accepted, they go once a controller clears them\n`
      : "";
  return `${head}\n\n${table}${holds}${stuck ? `\n${stuck}` : ""}`;
}
