// What the webhook tells the controller about its dependents index: one ConfigMap in the dep-ctrl workspace, written
// by the webhook (it is the one that sees a 403 from a provider's virtual workspace) and read by the controller (the
// one writer of rule status, which turns it into each rule's DependentsIndexed condition). The webhook needs no write
// access to rules or provider workspaces for this, and the controller no read access to dependents.
import { asRecord } from "../util/json.ts";
import type { LogicalClusterName } from "./types.ts";

export const INDEX_REPORT_NAMESPACE = "default";
export const INDEX_REPORT_NAME = "dependency-webhook-index";
export const INDEX_REPORT_KEY = "types.json";
export const INDEX_REPORT_PATH = `/api/v1/namespaces/${INDEX_REPORT_NAMESPACE}/configmaps/${INDEX_REPORT_NAME}`;

/** One dependent type as the index sees it; `Forbidden` means the provider's consent is missing or revoked. */
export type IndexedTypeState =
  { state: "ready" } | { state: "syncing" } | { state: "failing"; reason: "Forbidden" | "Error" };

/** Dependent type key (dependentTypeKey) → its state. */
export type IndexReport = Record<string, IndexedTypeState>;

/** `<export cluster>/<export>/<group>/<version>/<resource>`: one index watch per key, shared by every rule naming it. */
export function dependentTypeKey(d: {
  exportCluster: LogicalClusterName;
  apiExportName: string;
  group: string;
  version: string;
  resource: string;
}): string {
  return `${d.exportCluster}/${d.apiExportName}/${d.group}/${d.version}/${d.resource}`;
}

/** The report in a ConfigMap as read from kcp; undefined when absent or not ours to trust. */
export function parseIndexReport(configMap: unknown): IndexReport | undefined {
  const raw = asRecord(asRecord(configMap)?.["data"])?.[INDEX_REPORT_KEY];
  if (typeof raw !== "string") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const entries = asRecord(parsed);
  if (!entries) return undefined;
  const report: IndexReport = {};
  for (const [key, value] of Object.entries(entries)) {
    const v = asRecord(value);
    if (v?.["state"] === "ready" || v?.["state"] === "syncing") report[key] = { state: v["state"] };
    else if (v?.["state"] === "failing")
      report[key] = { state: "failing", reason: v["reason"] === "Forbidden" ? "Forbidden" : "Error" };
  }
  return report;
}

/** The ConfigMap carrying `report`. */
export function indexReportConfigMap(report: IndexReport): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: INDEX_REPORT_NAME, namespace: INDEX_REPORT_NAMESPACE },
    data: {
      [INDEX_REPORT_KEY]: JSON.stringify(
        Object.fromEntries(
          Object.keys(report)
            .sort()
            .map((k) => [k, report[k]]),
        ),
      ),
    },
  };
}
