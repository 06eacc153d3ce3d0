// What the webhook tells the controller about its dependents index: one ConfigMap in the dep-ctrl workspace, written
// by the webhook (it is the one that sees a 403 from a provider's virtual workspace) and read by the controller (the
// one writer of rule status, which turns it into each rule's DependentsIndexed condition). The webhook needs no write
// access to rules or provider workspaces for this, and the controller no read access to dependents.
import { asRecord } from "../util/json.ts";
import type { LogicalClusterName } from "./types.ts";

export const INDEX_REPORT_NAMESPACE = "default";
export const INDEX_REPORT_NAME = "dependency-webhook-index";
export const INDEX_REPORT_KEY = "types.json";
/** The merged settings of the fresh replicas (WebhookSettings), beside the merged types. */
export const INDEX_REPORT_SETTINGS_KEY = "settings.json";
export const INDEX_REPORT_PATH = `/api/v1/namespaces/${INDEX_REPORT_NAMESPACE}/configmaps/${INDEX_REPORT_NAME}`;

/** What decides a dependent type's deletes in `--lookup=auto` (its last lookup or probe): the index, a live list, or nothing. */
export type LookupSource = "index" | "live" | "none";

/**
 * One dependent type as the index sees it; `Forbidden` means the provider's consent is missing or revoked. `lookup`
 * is what protects it (auto mode only), by its last lookup or, where its index is forbidden, by the webhook's probe of
 * its live read access (no DELETE needed): absent in live or index mode, while a ready type has had no lookup since
 * the webhook started, when the probe failed, and in reports of webhooks older than the field (read as before it).
 */
export type IndexedTypeState = (
  { state: "ready" } | { state: "syncing" } | { state: "failing"; reason: "Forbidden" | "Error" }
) & { lookup?: LookupSource };

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

/** The dependent type a dependentTypeKey names; undefined when `key` is not one (five non-empty parts but the group). */
export function parseDependentTypeKey(
  key: string,
):
  | { exportCluster: LogicalClusterName; apiExportName: string; group: string; version: string; resource: string }
  | undefined {
  const parts = key.split("/");
  if (parts.length !== 5) return undefined;
  const [exportCluster, apiExportName, group, version, resource] = parts as [string, string, string, string, string];
  if (!exportCluster || !apiExportName || !version || !resource) return undefined;
  return { exportCluster: exportCluster as LogicalClusterName, apiExportName, group, version, resource };
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
    let state: IndexedTypeState | undefined;
    if (v?.["state"] === "ready" || v?.["state"] === "syncing") state = { state: v["state"] };
    else if (v?.["state"] === "failing")
      state = { state: "failing", reason: v["reason"] === "Forbidden" ? "Forbidden" : "Error" };
    const lookup = v?.["lookup"];
    // Unknown or absent (a webhook older than the field): the type reads as it did before the field.
    if (state) report[key] = isLookupSource(lookup) ? { ...state, lookup } : state;
  }
  return report;
}

function isLookupSource(v: unknown): v is LookupSource {
  return v === "index" || v === "live" || v === "none";
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

/**
 * What a webhook replica enforces, whatever its index sees: how it finds dependents, and whether it enforces rules
 * whose authors declined the read-only checks (--enforce-unverified-rules). The controller writes Ready from it, so
 * a rule reads Ready exactly when the webhook refuses for it.
 */
export interface WebhookSettings {
  lookup: "index" | "live" | "auto";
  enforceUnverified: boolean;
}

/**
 * The settings every fresh replica shares: enforceUnverified only when all of them enforce (a rule is Ready when
 * every replica refuses for it); lookup `live` only when all are live (then no rule has a DependentsIndexed
 * condition), else the most index-like.
 */
export function mergeSettings(all: readonly WebhookSettings[]): WebhookSettings | undefined {
  if (all.length === 0) return undefined;
  const lookup = all.some((s) => s.lookup === "index")
    ? "index"
    : all.some((s) => s.lookup === "auto")
      ? "auto"
      : "live";
  return { lookup, enforceUnverified: all.every((s) => s.enforceUnverified) };
}

export function parseSettings(raw: unknown): WebhookSettings | undefined {
  const v = asRecord(raw);
  const lookup = v?.["lookup"];
  if (lookup !== "index" && lookup !== "live" && lookup !== "auto") return undefined;
  return { lookup, enforceUnverified: v?.["enforceUnverified"] === true };
}

/** The merged settings in the report's ConfigMap; undefined when absent (a webhook older than them). */
export function parseReportSettings(configMap: unknown): WebhookSettings | undefined {
  const raw = asRecord(asRecord(configMap)?.["data"])?.[INDEX_REPORT_SETTINGS_KEY];
  if (typeof raw !== "string") return undefined;
  try {
    return parseSettings(JSON.parse(raw));
  } catch {
    return undefined;
  }
}
