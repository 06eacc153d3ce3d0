// Which dependent exports a local-targets pass visits, and the record that makes pruning level-triggered: the exports
// with local-target rules now, and those recorded (where the controller may have installed configurations) whose
// rules are gone, so their configurations are pruned. Pure; the record's I/O is src/kcp/local-targets-record.ts.
import { parseLogicalClusterName } from "../api/wire.ts";
import { asRecord, compareStrings as cmp } from "../util/json.ts";
import { exportKey, type DependentExport, type LocalTargetSet } from "./local-targets.ts";

/**
 * The exports where the controller may have installed local-target configurations, kept in one ConfigMap in the
 * dep-ctrl workspace (beside the rule verdicts, src/api/verdict-configmaps.ts): no tenant can write there, so a pass
 * that visits the recorded exports besides those with rules now prunes an export whose last rule went, and nothing a
 * tenant writes names an export to visit. One entry (`<cluster>/<export>`, ~60 bytes) per export: far from 1 MiB.
 */
export const LOCAL_EXPORTS_NAME = "dependency-local-target-exports";
export const LOCAL_EXPORTS_KEY = "exports.json";

/** The recorded exports; what does not parse is left out (an export left out is not visited once its rules are gone). */
export function parseExportRecord(configMap: unknown): DependentExport[] {
  const raw = asRecord(asRecord(configMap)?.["data"])?.[LOCAL_EXPORTS_KEY];
  let entries: unknown;
  try {
    entries = typeof raw === "string" ? JSON.parse(raw) : [];
  } catch {
    entries = [];
  }
  const out: DependentExport[] = [];
  for (const entry of Array.isArray(entries) ? (entries as unknown[]) : []) {
    const [cluster, exportName, ...rest] = typeof entry === "string" ? entry.split("/") : [];
    const c = parseLogicalClusterName(cluster);
    if (c && exportName && rest.length === 0) out.push({ cluster: c, exportName });
  }
  return out;
}

/** The record's data: the exports' keys, sorted and unique, so an unchanged set is the same text (no write). */
export function exportRecordData(exports: readonly DependentExport[]): Record<string, string> {
  return { [LOCAL_EXPORTS_KEY]: JSON.stringify([...new Set(exports.map(exportKey))].sort(cmp)) };
}

/** One export a pass visits: with its rules' set, or only recorded (no rule asks any more: everything is pruned). */
export interface ExportVisit {
  export: DependentExport;
  set?: LocalTargetSet;
}

/** The exports with local-target rules now, and the recorded ones without: the latter are visited to prune. */
export function exportsToVisit(sets: readonly LocalTargetSet[], recorded: readonly DependentExport[]): ExportVisit[] {
  const visits = new Map<string, ExportVisit>(sets.map((set) => [exportKey(set.export), { export: set.export, set }]));
  for (const e of recorded) if (!visits.has(exportKey(e))) visits.set(exportKey(e), { export: e });
  return [...visits.values()].sort((a, b) => cmp(exportKey(a.export), exportKey(b.export)));
}

/**
 * How pruning an export without rules went: `pruned` (the view lists none of our configurations any more), `left`
 * (a write failed, or the read failed for a reason that may pass: visit again), or `gone` (the export's virtual
 * workspace answers as exportGone says: the export or the provider's grant is gone, so the controller can reach none of
 * them again; what is left stays until each consumer deletes it).
 */
export type PruneOutcome = "pruned" | "left" | "gone";

/** The record to keep before the writes: it grows first, so an export is recorded before anything is installed. */
export function recordBefore(sets: readonly LocalTargetSet[], recorded: readonly DependentExport[]): DependentExport[] {
  return exportsToVisit(sets, recorded).map((v) => v.export);
}

/** The record after the writes: every export with rules, and those without that still have something left. */
export function recordAfter(
  visits: readonly ExportVisit[],
  pruned: ReadonlyMap<string, PruneOutcome>,
): DependentExport[] {
  return visits.filter((v) => v.set || pruned.get(exportKey(v.export)) === "left").map((v) => v.export);
}
