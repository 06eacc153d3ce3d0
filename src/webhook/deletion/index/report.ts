// Publishes the index's health (src/api/index-report.ts) into the dep-ctrl workspace, where the controller turns it
// into each rule's DependentsIndexed condition. Level-triggered on a work loop: each pass computes the whole report
// and writes only when it differs from what is stored, so a steady index makes no writes but a heartbeat a minute.
//
// Every replica has an index and may see it differently for a while (one has listed, the other not yet; one got a
// 403). Each writes its own entry (`replica.<name>.json`, with the time it was written) and, in the same write, the
// merge of every entry younger than REPLICA_TTL_MS into the key the controller reads: per type the worst state any
// replica reports. The merge is a function of the entries alone, so whichever replica writes last writes the same
// thing: the condition cannot flap between replicas' views. The worst state is the one to show, because that
// replica answers its deletes accordingly. A replica that is gone stops its heartbeat and drops out of the merge.
// What protects a type (auto mode: its last lookup, or the probe of a forbidden type's live read access, run before
// each report) merges the other way (why: above mergeReports).
import { hostname } from "node:os";
import type { Logger } from "pino";
import {
  INDEX_REPORT_KEY,
  INDEX_REPORT_PATH,
  INDEX_REPORT_SETTINGS_KEY,
  indexReportConfigMap,
  mergeSettings,
  parseIndexReport,
  parseSettings,
  type WebhookSettings,
  type IndexReport,
  type IndexedTypeState,
  type LookupSource,
} from "../../../api/index-report.ts";
import { isApiError } from "../../../kcp/rest.ts";
import { realClock, type Clock } from "../../../util/clock.ts";
import { WorkLoop } from "../../../util/workloop.ts";
import type { TypeHealth } from "./watches.ts";

/**
 * The report of the index's types; a 403 anywhere means the provider's consent is missing (the hint to give).
 * `lookups` (auto mode: what the decision reports per type, protection.ts) says what protects each type, by its last
 * lookup or its probe (probe.ts).
 */
export function reportOf(
  health: readonly TypeHealth[],
  lookups: ReadonlyMap<string, LookupSource> = new Map(),
): IndexReport {
  const report: IndexReport = {};
  for (const t of health) {
    const state: IndexedTypeState =
      t.state === "failing"
        ? { state: "failing", reason: t.errors.some((e) => /\b403\b/.test(e)) ? "Forbidden" : "Error" }
        : { state: t.state };
    const lookup = lookups.get(t.type);
    report[t.type] = lookup ? { ...state, lookup } : state;
  }
  return report;
}

/** An entry older than this is a replica that is gone: out of the merge, and removed at the next write. */
export const REPLICA_TTL_MS = 180_000;
/** A replica rewrites its entry at least this often, so a live one never ages out. */
const HEARTBEAT_MS = 60_000;
const ENTRY = /^replica\.([-._a-zA-Z0-9]+)\.json$/;

const RANK = (s: IndexedTypeState): number =>
  s.state === "ready" ? 0 : s.state === "syncing" ? 1 : s.reason === "Error" ? 2 : 3;

// The lookup merges the other way: the most protecting any fresh replica reports, live first. It only matters where
// the merged index state is not ready, and there it feeds the one verdict every replica's registry reads back: live
// on any replica makes the rule "protected", so a replica whose own reads fail refuses (503) the DELETEs the rule
// gates rather than waving them through. That is the safe side for a deletion protection, and it is short-lived:
// the replicas share one identity, so one that still says live loses the grant too, and says none, at its next lookup
// or probe (probe.ts: within its interval).
const LOOKUP_RANK: Record<LookupSource, number> = { none: 1, index: 2, live: 3 };
const lookupRank = (s: IndexedTypeState): number => (s.lookup ? LOOKUP_RANK[s.lookup] : 0);

/**
 * Per type, the worst state any report gives (failing: Forbidden over Error, then syncing, then ready), with the
 * most protecting lookup any report gives (live, then index, then none; absent when none reports one).
 */
export function mergeReports(reports: readonly IndexReport[]): IndexReport {
  const out: IndexReport = {};
  for (const r of reports)
    for (const [type, state] of Object.entries(r)) {
      const have = out[type];
      const worst = !have || RANK(state) > RANK(have) ? state : have;
      const best = have && lookupRank(have) > lookupRank(state) ? have.lookup : state.lookup;
      out[type] = withLookup(worst, best);
    }
  return out;
}

function withLookup(s: IndexedTypeState, lookup: LookupSource | undefined): IndexedTypeState {
  const state: IndexedTypeState = s.state === "failing" ? { state: "failing", reason: s.reason } : { state: s.state };
  return lookup ? { ...state, lookup } : state;
}

/** The report as the ConfigMap stores it: keys sorted, so equal reports are equal strings. */
const canonical = (r: IndexReport): string =>
  (indexReportConfigMap(r)["data"] as Record<string, string>)[INDEX_REPORT_KEY]!;

interface Entry {
  at: number;
  types: IndexReport;
  settings?: WebhookSettings;
}

function entriesOf(data: Record<string, string>): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const [key, raw] of Object.entries(data)) {
    const replica = ENTRY.exec(key)?.[1];
    if (replica === undefined) continue;
    try {
      const v = JSON.parse(raw) as { at?: unknown; types?: unknown; settings?: unknown };
      const types = parseIndexReport({ data: { [INDEX_REPORT_KEY]: JSON.stringify(v.types) } });
      const settings = parseSettings(v.settings);
      if (typeof v.at === "number" && types) out.set(replica, { at: v.at, types, ...(settings ? { settings } : {}) });
    } catch {
      // not an entry this code wrote: left out of the merge
    }
  }
  return out;
}

interface ConfigMapClient {
  request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T>;
}

export interface IndexReporterOptions {
  /** Client for the dep-ctrl workspace. */
  client: ConfigMapClient;
  health: () => readonly TypeHealth[];
  logger: Logger;
  clock?: Clock;
  /** This replica's name in the report (default the host name: the pod's name). */
  replica?: string;
  /**
   * What protects each type, as the decision reports it (auto mode: protection.ts `reportedLookups`, over the
   * lookup book), given the index's report without it.
   */
  lookups?: (states: IndexReport) => ReadonlyMap<string, LookupSource>;
  /** Runs before each report (auto mode: the probes of types whose source is due, so a report carries them). */
  beforeReport?: BeforeReport;
  /** What this replica enforces (its flags), published for the controller's Ready. */
  settings?: WebhookSettings;
}

/** Runs before each report, e.g. the probes of types whose source is due (auto mode); its failure is logged. */
export type BeforeReport = () => Promise<void>;

export class IndexReporter {
  private readonly opts: IndexReporterOptions;
  private readonly loop: WorkLoop;

  constructor(opts: IndexReporterOptions) {
    this.opts = opts;
    this.loop = new WorkLoop({
      pass: () => this.publish(),
      logger: opts.logger,
      resyncMs: 60_000,
      // A type syncs within a second or two; waiting that long saves writing its passing "syncing" state.
      debounceMs: 2_000,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Something in the index changed, or what protects a type at its lookups. */
  changed(): void {
    this.loop.enqueue();
  }

  /** The data to store: this replica's entry (rewritten when changed or due), the fresh entries, their merge. */
  private wanted(have: Record<string, string>): Record<string, string> {
    const now = (this.opts.clock ?? realClock).now();
    const me = (this.opts.replica ?? hostname()).replace(/[^-._a-zA-Z0-9]/g, "_");
    const entries = entriesOf(have);
    const health = this.opts.health();
    const mine = reportOf(health, this.opts.lookups?.(reportOf(health)));
    const before = entries.get(me);
    const settings = this.opts.settings;
    const sameSettings = JSON.stringify(before?.settings) === JSON.stringify(settings);
    if (!before || canonical(before.types) !== canonical(mine) || !sameSettings || now - before.at >= HEARTBEAT_MS)
      entries.set(me, { at: now, types: mine, ...(settings ? { settings } : {}) });
    const fresh = [...entries].filter(([, e]) => now - e.at < REPLICA_TTL_MS).sort(([a], [b]) => (a < b ? -1 : 1));
    const data: Record<string, string> = { [INDEX_REPORT_KEY]: canonical(mergeReports(fresh.map(([, e]) => e.types))) };
    const merged = mergeSettings(fresh.flatMap(([, e]) => (e.settings ? [e.settings] : [])));
    if (merged) data[INDEX_REPORT_SETTINGS_KEY] = JSON.stringify(merged);
    for (const [replica, e] of fresh)
      data[`replica.${replica}.json`] = JSON.stringify({
        at: e.at,
        types: JSON.parse(canonical(e.types)) as unknown,
        ...(e.settings ? { settings: e.settings } : {}),
      });
    return data;
  }

  private async publish(): Promise<void> {
    await this.opts
      .beforeReport?.()
      .catch((err: unknown) => this.opts.logger.warn({ err: String(err) }, "before the index report: probing failed"));
    let have: { metadata?: { resourceVersion?: string }; data?: Record<string, string> } | undefined;
    try {
      have = await this.opts.client.request("GET", INDEX_REPORT_PATH);
    } catch (err) {
      if (!isApiError(err, 404)) throw err;
    }
    const data = this.wanted(have?.data ?? {});
    const want: Record<string, unknown> = { ...indexReportConfigMap({}), data };
    const wantData = data[INDEX_REPORT_KEY];
    if (sameData(have?.data ?? {}, data)) return;
    if (have) {
      const rv = have.metadata?.resourceVersion;
      const body = { ...want, metadata: { ...(want["metadata"] as object), ...(rv ? { resourceVersion: rv } : {}) } };
      await this.opts.client.request("PUT", INDEX_REPORT_PATH, { body });
    } else {
      await this.opts.client.request("POST", INDEX_REPORT_PATH.replace(/\/[^/]+$/, ""), { body: want });
    }
    // The heartbeat rewrites this replica's entry every minute: only a changed merge is worth a line.
    if (have?.data?.[INDEX_REPORT_KEY] !== wantData)
      this.opts.logger.info({ report: wantData }, "published the dependents index report");
  }
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
