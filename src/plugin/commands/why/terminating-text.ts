// The text why prints for an object that is being deleted, pure: since when, each finalizer with its usual owner,
// its conditions and owner references, and what still holds it (dependents, a namespace's content, a workspace's
// LogicalCluster). Finalizer names, conditions and object names are other writers' text: tables make each cell
// printable, and the lines here go through printable() themselves.
import { printable } from "../../../util/printable.ts";
import { renderTable } from "../../table.ts";
import { age } from "../../finalizers.ts";
import { FOREGROUND, type Condition, type HeldFinalizer, type Remaining, type Terminating } from "./terminating.ts";

/** How many names a row of a namespace's content shows; -o json has them all. */
const NAMES_SHOWN = 5;

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function finalizerTable(fs: readonly HeldFinalizer[]): string {
  const rows = fs.map((f) => [f.in === "spec" ? `${f.name} (spec.finalizers)` : f.name, f.owner, f.note ?? ""]);
  return renderTable(["finalizer", "usually owned by", "when it goes"], rows).trimEnd();
}

const conditionTable = (cs: readonly Condition[]): string =>
  renderTable(
    ["type", "status", "reason", "message"],
    cs.map((c) => [c.type, c.status, c.reason ?? "", c.message ?? ""]),
  ).trimEnd();

/** `held-vm (deleting; syncagent.kcp.io/cleanup)`: a remaining object with what holds it in turn. */
function described(r: Remaining): string {
  const why = [r.deleting ? "deleting" : "", r.finalizers.join(",")].filter(Boolean).join("; ");
  return why ? `${r.name} (${why})` : r.name;
}

function contentLines(contents: readonly Remaining[]): string[] {
  if (contents.length === 0) return ["", "no objects left in the namespace (of the types you may list)"];
  const byType = new Map<string, Remaining[]>();
  for (const r of contents) byType.set(r.type, [...(byType.get(r.type) ?? []), r]);
  const rows = [...byType].map(([type, rs]) => {
    const shown = rs.slice(0, NAMES_SHOWN).map(described);
    if (rs.length > NAMES_SHOWN) shown.push(`and ${rs.length - NAMES_SHOWN} more`);
    return [type, String(rs.length), shown.join(", ")];
  });
  return [
    "",
    `objects still in the namespace (${contents.length}, of the types you may list):`,
    "",
    renderTable(["type", "left", "objects"], rows).trimEnd(),
  ];
}

function dependentLines(t: Terminating): string[] {
  const ds = t.dependents;
  if (ds === undefined) return [];
  if (ds.length === 0) return ["", `dependents: none left (of the types you may list); ${FOREGROUND} ends shortly`];
  const rows = ds.map((d) => [d.type, d.namespace ?? "", described(d), d.blocksOwnerDeletion ? "yes" : "no"]);
  return [
    "",
    `dependents still there (objects whose ownerReferences name this one; ${FOREGROUND} waits for those that block):`,
    "",
    renderTable(["type", "namespace", "name", "blocks"], rows).trimEnd(),
  ];
}

function logicalClusterLines(t: Terminating, workspace: string): string[] {
  const lc = t.logicalCluster;
  if (!lc) return [];
  const state = lc.deletionTimestamp
    ? `being deleted since ${printable(lc.deletionTimestamp)}`
    : "not being deleted (yet)";
  const lines = ["", `its LogicalCluster (in ${printable(workspace)}): ${state}${phaseOf(lc.phase)}`];
  if (lc.finalizers.length > 0) lines.push("", finalizerTable(lc.finalizers));
  if (lc.conditions.length > 0) lines.push("", conditionTable(lc.conditions));
  return lines;
}

const phaseOf = (phase: string | undefined): string => (phase ? `, phase ${printable(phase)}` : "");

function nextSteps(t: Terminating): string[] {
  if (t.finalizers.length === 0)
    return ["", "what to do next: nothing holds it; kcp removes it once its deletion completes. Ask again shortly."];
  return [
    "",
    "what to do next:",
    "  each finalizer is removed by its owner once that owner's cleanup is done; if one stays, look at its owner",
    "  (is it running, what do its logs say). Removing a finalizer by hand skips that cleanup: an operator's",
    "  decision, for an owner that is gone for good.",
  ];
}

/** The report for an object with a deletionTimestamp; `subject` and `where` are printable already. */
export function terminatingText(subject: string, where: string, t: Terminating, workspace: string): string {
  const ago = t.ageSeconds !== undefined ? ` (${age(t.ageSeconds)} ago)` : "";
  const lines = [
    `${subject} (${where}): being deleted since ${printable(t.since)}${ago}, and still here${phaseOf(t.phase)}.`,
  ];
  if (t.finalizers.length === 0) lines.push("no finalizers: nothing holds it, its deletion is still in progress");
  else lines.push(`held by ${plural(t.finalizers.length, "finalizer")}:`, "", finalizerTable(t.finalizers));
  if (t.conditions.length > 0) lines.push("", "conditions:", "", conditionTable(t.conditions));
  if (t.ownerReferences.length > 0) {
    const rows = t.ownerReferences.map((o) => [o.kind, o.name, o.uid, o.blockOwnerDeletion ? "yes" : "no"]);
    lines.push("", "owned by (ownerReferences):", "", renderTable(["kind", "name", "uid", "blocks"], rows).trimEnd());
  }
  lines.push(...dependentLines(t));
  if (t.contents) lines.push(...contentLines(t.contents));
  lines.push(...logicalClusterLines(t, workspace), ...nextSteps(t));
  return lines.join("\n") + "\n";
}
