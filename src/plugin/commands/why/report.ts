// why's report, pure: the dry-run DELETE's answer to an exit code and the text that explains it (who refused, every
// blocker, the rules behind them when readable, and what to do next).
import { SKIP_PROTECTION_ANNOTATION } from "../../../api/types.ts";
import type { RuleInWorkspace } from "../../graph.ts";
import type { Blocker, DeleteAnswer, Refusal } from "../../causes.ts";
import type { ApiResource } from "../../discovery.ts";
import { renderTable } from "../../table.ts";
import { printable } from "../../../util/printable.ts";

export interface WhyTarget {
  resource: ApiResource;
  name: string;
  namespace?: string;
  workspace: string;
}

export interface WhyResult {
  exitCode: 0 | 1 | 2;
  text: string;
}

// What the reports quote (a refusal's message and reason, the webhook's name, the blockers the causes name) was
// written by other tenants and their webhooks: every piece goes through printable() (tables do it per cell).
export const where = (t: WhyTarget): string =>
  printable(`${t.workspace}${t.namespace ? `, namespace ${t.namespace}` : ""}`);
const subjectOf = (t: WhyTarget): string => printable(`${t.resource.name}/${t.name}`);
const nsFlag = (ns: string | undefined): string => (ns ? ` -n ${printable(ns)}` : "");

/**
 * The rules that make `b` a blocker of the target: dependent kind as named, a dependency on the target's
 * group/resource at the field the webhook reported (any field when it reported none). `<workspace>:<name>`, sorted.
 */
export function rulesBehind(b: Blocker, t: WhyTarget, rules: readonly RuleInWorkspace[]): string[] {
  const out = new Set<string>();
  for (const { workspace, rule } of rules) {
    if (rule.dependent?.kind !== b.kind) continue;
    const hit = rule.dependencies.some(
      (d) =>
        d.target.group === t.resource.group &&
        d.target.resource === t.resource.name &&
        (b.field === undefined || d.fieldPath.source === b.field),
    );
    if (hit) out.add(`${workspace}:${rule.key.name}`);
  }
  return [...out].sort();
}

/** The report for a refused dry-run DELETE: who refused, every blocker, and what to do next. */
export function refusalReport(t: WhyTarget, r: Refusal, rules?: readonly RuleInWorkspace[]): string {
  const lines = [`${subjectOf(t)} (${where(t)}): a delete would be REFUSED now.`];
  const by = r.webhook ? `admission webhook "${printable(r.webhook)}"` : "kcp";
  lines.push(`refused by: ${by} (${r.code} ${printable(r.reason)})`);
  if (r.blockers.length === 0) {
    lines.push(`message: ${printable(r.message)}`);
    if (r.code === 503)
      lines.push(
        "",
        "what to do next: the webhook cannot decide yet (starting, or a rule's provider is unresolved); retry in a minute.",
      );
    else if (r.code >= 500)
      lines.push(
        "",
        "what to do next: the webhook could not check the dependents (a lookup failed); retry, and tell your platform team if it persists.",
      );
    return lines.join("\n") + "\n";
  }
  const count =
    r.total !== undefined && r.total > r.blockers.length
      ? `${r.blockers.length} of ${r.total}`
      : `${r.blockers.length}`;
  const source =
    r.source === "causes"
      ? "from the webhook's status.details.causes"
      : "parsed from the refusal message: the webhook sent no status.details.causes, so at most ten are named and the fields are unknown";
  lines.push(`still referenced by ${count} object${r.blockers.length === 1 ? "" : "s"} (${source}):`, "");
  const rows = r.blockers.map((b) => [
    b.kind,
    b.namespace ?? t.namespace ?? "",
    b.name,
    b.field ?? "?",
    ...(rules ? [rulesBehind(b, t, rules).join(",") || "(none readable)"] : []),
  ]);
  const headers = ["kind", "namespace", "name", "field", ...(rules ? ["rule"] : [])];
  lines.push(renderTable(headers, rows).trimEnd());
  if (!r.complete) lines.push("", "(the webhook found more than it listed; delete these and ask again)");
  lines.push(
    "",
    "what to do next:",
    "  1. delete these dependents, or change the field shown to name another object, then ask again:",
  );
  for (const [kind, group] of groupByKindAndNamespace(r.blockers, t.namespace))
    lines.push(
      `       kubectl delete ${printable(`${kind.toLowerCase()} ${group.names.join(" ")}`)}${nsFlag(group.namespace)}`,
    );
  const annotate = printable(`${t.resource.name} ${t.name}`);
  lines.push(
    "  2. break glass (an operator's decision: protection is skipped for this one object):",
    `       kubectl annotate ${annotate}${nsFlag(t.namespace)} ${SKIP_PROTECTION_ANNOTATION}=true`,
  );
  return lines.join("\n") + "\n";
}

function groupByKindAndNamespace(
  blockers: readonly Blocker[],
  defaultNs: string | undefined,
): [string, { namespace?: string; names: string[] }][] {
  const groups = new Map<string, { kind: string; namespace?: string; names: string[] }>();
  for (const b of blockers) {
    const ns = b.namespace ?? defaultNs;
    const key = `${b.kind}/${ns ?? ""}`;
    const g = groups.get(key) ?? { kind: b.kind, ...(ns ? { namespace: ns } : {}), names: [] };
    if (!g.names.includes(b.name)) g.names.push(b.name);
    groups.set(key, g);
  }
  return [...groups.values()].map((g) => [g.kind, g]);
}

/** The dry-run answer → exit code and report. Pure. */
export function whyResult(t: WhyTarget, answer: DeleteAnswer, rules?: readonly RuleInWorkspace[]): WhyResult {
  const subject = subjectOf(t);
  if (answer.outcome === "allowed")
    return {
      exitCode: 0,
      text: `${subject} (${where(t)}): can be deleted now; no dependency rule refuses it (checked with a dry-run DELETE).\n`,
    };
  if (answer.outcome === "gone") return { exitCode: 2, text: `${subject} not found in ${where(t)}\n` };
  const { status, refusal: r } = answer;
  if (r.webhook !== undefined) return { exitCode: 1, text: refusalReport(t, r, rules) };
  const msg = printable(r.message);
  if (status === 403)
    return {
      exitCode: 2,
      text: `you may not delete ${printable(t.resource.name)} in ${where(t)}, so this cannot be asked: ${msg}\n`,
    };
  if (status === 401) return { exitCode: 2, text: `kcp does not accept your credentials (401): ${msg}\n` };
  return {
    exitCode: 2,
    text: `cannot ask about ${subject} in ${where(t)}: ${status} ${printable(r.reason)}: ${msg}\n`,
  };
}
