// why's report, pure: the dry-run DELETE's answer to an exit code and the text that explains it (who refused, every
// blocker, the rules behind them when readable, and what to do next).
import { SKIP_PROTECTION_ANNOTATION } from "../../../api/types.ts";
import { dependenciesOf, type RuleInWorkspace } from "../../graph.ts";
import type { Blocker, DeleteAnswer, Refusal } from "../../causes.ts";
import type { ApiResource } from "../../discovery.ts";
import { renderTable } from "../../table.ts";
import { printable, printableJson } from "../../../util/printable.ts";
import { terminatingText } from "./terminating-text.ts";
import type { Terminating } from "./terminating.ts";

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

export type WhyFormat = "text" | "json";

/** Everything why found out about one object. */
export interface WhyFindings {
  target: WhyTarget;
  /** The dry-run DELETE's answer. */
  answer: DeleteAnswer;
  /** The rules read with --rule-workspace, to name the rule behind each blocker. */
  rules?: readonly RuleInWorkspace[];
  /** Set when the object has a deletionTimestamp. */
  terminating?: Terminating;
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
    const hit = dependenciesOf(rule).some(
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

/** The document `-o json` prints (docs/plugin.md describes it). */
export interface WhyDocument {
  object: { group: string; resource: string; kind: string; namespace: string | null; name: string; workspace: string };
  verdict: "deletable" | "refused" | "terminating";
  exitCode: 0 | 1;
  refusal: RefusalDocument | null;
  terminating: Terminating | null;
}

export interface RefusalDocument {
  webhook: string | null;
  code: number;
  reason: string;
  message: string;
  source: Refusal["source"];
  complete: boolean;
  total?: number;
  blockers: { kind: string; namespace: string | null; name: string; field: string | null; rules?: string[] }[];
}

/** The refusal as -o json prints it: the same facts as the text, each blocker with its rules when they were read. */
function refusalJson(t: WhyTarget, r: Refusal, rules?: readonly RuleInWorkspace[]): RefusalDocument {
  return {
    webhook: r.webhook ?? null,
    code: r.code,
    reason: r.reason,
    message: r.message,
    source: r.source,
    complete: r.complete,
    ...(r.total !== undefined ? { total: r.total } : {}),
    blockers: r.blockers.map((b) => ({
      kind: b.kind,
      namespace: b.namespace ?? t.namespace ?? null,
      name: b.name,
      field: b.field ?? null,
      ...(rules ? { rules: rulesBehind(b, t, rules) } : {}),
    })),
  };
}

const refusedByWebhook = (a: DeleteAnswer): Refusal | undefined =>
  a.outcome === "refused" && a.refusal.webhook !== undefined ? a.refusal : undefined;

/**
 * What why answers, in either format. A Terminating object exits 1 (something holds it) whatever the dry run said:
 * its report comes first, then the refusal if a webhook refused the dry run. Otherwise the dry run decides
 * (whyResult). Exit code 2 is no answer, said on stderr in both formats. Pure.
 */
export function whyReport(f: WhyFindings, format: WhyFormat = "text"): WhyResult & { notes?: string[] } {
  const plain = whyResult(f.target, f.answer, f.rules);
  const term = f.answer.outcome === "gone" ? undefined : f.terminating;
  if (!term) return format === "json" && plain.exitCode !== 2 ? { ...plain, text: whyJson(f, plain.exitCode) } : plain;
  const refusal = refusedByWebhook(f.answer);
  // The dry run could not be asked (403, 5xx without a webhook): the finalizers are still the answer.
  const notes = plain.exitCode === 2 ? [`could not ask whether a delete would be refused: ${plain.text.trim()}`] : [];
  const text =
    format === "json"
      ? whyJson(f, 1)
      : terminatingText(subjectOf(f.target), where(f.target), term, `${f.target.workspace}:${f.target.name}`) +
        (refusal ? `\n${plain.text}` : "");
  return { exitCode: 1, text, ...(notes.length > 0 ? { notes } : {}) };
}

/** The JSON document of -o json: the object, the exit code and its verdict, the refusal and the deletion state. */
function whyJson(f: WhyFindings, exitCode: 0 | 1): string {
  const { target: t } = f;
  const refusal = refusedByWebhook(f.answer);
  const verdict: WhyDocument["verdict"] = f.terminating ? "terminating" : exitCode === 0 ? "deletable" : "refused";
  const doc: WhyDocument = {
    object: {
      group: t.resource.group,
      resource: t.resource.name,
      kind: t.resource.kind,
      namespace: t.namespace ?? null,
      name: t.name,
      workspace: t.workspace,
    },
    verdict,
    exitCode,
    refusal: refusal ? refusalJson(t, refusal, f.rules) : null,
    terminating: f.terminating ?? null,
  };
  return printableJson(doc) + "\n";
}
