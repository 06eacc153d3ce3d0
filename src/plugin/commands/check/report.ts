// check's report, pure: the rules whose Ready condition is not True, and the dangling references, as tables.
import { isRecord } from "../../../util/json.ts";
import type { Reference } from "../../references.ts";
import type { RuleScan } from "../../rules.ts";
import { renderTable } from "../../table.ts";

export interface NotReadyRule {
  workspace: string;
  name: string;
  status: string;
  reason: string;
  message: string;
}

/** Rules whose Ready condition is missing or not True, and rules the rule model finds problems in. Pure. */
export function notReadyRules(objects: RuleScan["objects"]): NotReadyRule[] {
  const out: NotReadyRule[] = [];
  for (const { workspace, object } of objects) {
    const meta = isRecord(object["metadata"]) ? object["metadata"] : {};
    const name = typeof meta["name"] === "string" ? meta["name"] : "?";
    const status = isRecord(object["status"]) ? object["status"] : {};
    const conditions = Array.isArray(status["conditions"]) ? (status["conditions"] as unknown[]) : [];
    const ready = conditions.find((c) => isRecord(c) && c["type"] === "Ready") as Record<string, unknown> | undefined;
    if (ready?.["status"] === "True") continue;
    out.push({
      workspace,
      name,
      status: typeof ready?.["status"] === "string" ? ready["status"] : "Unknown",
      reason: typeof ready?.["reason"] === "string" ? ready["reason"] : "NoStatus",
      message: typeof ready?.["message"] === "string" ? ready["message"] : "the controller has not written a status",
    });
  }
  return out;
}

/** The check's report: dangling references and rules that are not Ready, as tables. Pure. */
export function checkReport(workspace: string, refs: readonly Reference[], notReady: readonly NotReadyRule[]): string {
  const dangling = refs.filter((r) => r.state !== "exists");
  const danglingPart =
    dangling.length === 0
      ? `no dangling references in ${workspace}\n`
      : `dangling references in ${workspace} (the dependent names something that does not exist):\n\n` +
        renderTable(
          ["namespace", "dependent", "field", "missing", "rule"],
          dangling.map((r) => [
            r.from.namespace ?? "",
            `${r.from.kind}/${r.from.name}`,
            r.field,
            `${r.to.resource}/${r.to.name}${r.state === "type-not-served" ? " (type not bound here)" : ""}`,
            r.rule,
          ]),
        );
  const rulesPart =
    notReady.length === 0
      ? "every DependencyRule read is Ready\n"
      : "DependencyRules that are not Ready:\n\n" +
        renderTable(
          ["workspace", "rule", "ready", "reason", "message"],
          notReady.map((r) => [r.workspace, r.name, r.status, r.reason, r.message]),
        );
  return `${danglingPart}\n${rulesPart}`;
}
