// The finder of `--lookup=auto` (the default): the dependents index where the rule's provider consented to it, and
// the live lookup where the webhook holds the per-shard read grant instead (deploy/rbac/system-admin.yaml, the grant
// the Go original's installations already have). An installation coming from the original, whose providers never
// applied deploy/rbac/provider-index.yaml, is therefore protected from its first DELETE, and one that follows
// getting-started (consent, no shard grant) never makes a live read.
//
// Per lookup:
//   1. the index answers → that answer (the index protects this type);
//   2. the index cannot answer because the provider's consent is missing (403) → a live list: its answer (live
//      protects), or, when that list is refused with 403 too, "unavailable" with reason "no-read-access" (nothing
//      protects); any other live failure is thrown, as in live mode (fail closed, 500);
//   3. the index cannot answer for another reason (starting, syncing, a shard failing) → a live list if it is
//      allowed, else the index's own answer: the live list only ever replaces an answer the index could not give.
// What answered is the type's source (index, live, none), reported to the rule's status. A type whose index is
// forbidden also has its source probed without a DELETE (probe.ts), so the status tells before the first one.
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import {
  dependentTypeKey,
  parseDependentTypeKey,
  type IndexReport,
  type IndexedTypeState,
  type LookupSource,
} from "../../api/index-report.ts";
import type { LogicalClusterName } from "../../api/types.ts";
import { isApiError, type RestClient } from "../../kcp/rest.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import type { Lookup } from "../admission.ts";
import type { DependentsIndex } from "./index/index.ts";
import { reportOf, type IndexReporter } from "./index/report.ts";
import { dependentListPath, LiveDependentFinder } from "./live.ts";
import { LookupProber, probeLiveRead, type ProbeTarget } from "./probe.ts";
import { unavailable, type DependentFinder, type FinderAnswer, type Unavailable } from "./finder.ts";

/** What protects a dependent type, by its last lookup or probe: the index, a live list, or nothing (no read access). */
export type { LookupSource };

export const LOOKUP_SOURCES: readonly LookupSource[] = ["index", "live", "none"];

export interface HybridFinderOptions {
  index: DependentFinder;
  live: DependentFinder;
  /** The index's state of a dependent type (by dependentTypeKey); undefined while it is not watched. */
  indexState: (key: string) => IndexedTypeState | undefined;
  logger: Logger;
  /** A type's source changed: the index report carries it to the rule's status. */
  onSourceChange?: () => void;
  clock?: Clock;
}

/** When a type's source was last learned, and the consumer workspace of its last lookup (where a probe lists). */
interface Learned {
  at: number;
  consumer?: LogicalClusterName;
}

export class HybridDependentFinder implements DependentFinder {
  private readonly opts: HybridFinderOptions;
  private readonly sources = new Map<string, LookupSource>();
  private readonly learned = new Map<string, Learned>();

  constructor(opts: HybridFinderOptions) {
    this.opts = opts;
  }

  async find(lookup: Lookup, limit: number, signal?: AbortSignal): Promise<FinderAnswer> {
    const key = dependentTypeKey(lookup.dependent);
    const asked: Learned = { at: this.now(), consumer: lookup.consumer };
    const fromIndex = await this.opts.index.find(lookup, limit, signal);
    if (fromIndex.ok) return this.answered(key, "index", fromIndex, asked);
    // Over its budget, a consumer's own dependents are what is unreadable: a live list would read them all the same,
    // on every delete, and undo the budget that confines them to that workspace.
    if (fromIndex.reason === "unreadable") return fromIndex;
    const state = this.opts.indexState(key);
    const noConsent = state?.state === "failing" && state.reason === "Forbidden";
    try {
      return this.answered(key, "live", await this.opts.live.find(lookup, limit, signal), asked);
    } catch (err) {
      if (!noConsent) return fromIndex;
      if (!isApiError(err, 403)) throw err;
      return this.answered(key, "none", noReadAccess(fromIndex, err), asked);
    }
  }

  /** The source of each dependent type at its last lookup or probe (for the metric and the index report). */
  lastSources(): ReadonlyMap<string, LookupSource> {
    return this.sources;
  }

  /** When the type's source was last learned, by a lookup or a probe; undefined when never. */
  learnedAt(key: string): number | undefined {
    return this.learned.get(key)?.at;
  }

  /** Where to probe a type: the consumer workspace of its last lookup, else its provider's workspace. */
  probeTarget(key: string): ProbeTarget | undefined {
    const dependent = parseDependentTypeKey(key);
    if (!dependent) return undefined;
    const consumer = this.learned.get(key)?.consumer ?? dependent.exportCluster;
    return { key, path: dependentListPath({ consumer, dependent: { ...dependent, kind: "" } } as Lookup) };
  }

  /** A probe that started at `startedAt` found `source`; a lookup that began since knows better and stands. */
  probed(key: string, source: LookupSource, startedAt: number): void {
    const learned = this.learned.get(key);
    if (learned && learned.at > startedAt) return;
    this.answered(key, source, undefined, { ...learned, at: startedAt });
  }

  private now(): number {
    return (this.opts.clock ?? realClock).now();
  }

  /** `learned`: when the lookup (or probe) that found `source` began, and where a lookup listed. */
  private answered<A extends FinderAnswer | undefined>(
    key: string,
    source: LookupSource,
    answer: A,
    learned: Learned,
  ): A {
    this.learned.set(key, learned);
    const before = this.sources.get(key);
    if (before !== source) {
      this.sources.set(key, source);
      const how = {
        index: "the dependents index",
        live: "live lookups (the per-shard read grant; the index is not readable)",
        none: "nothing: neither the provider's index consent nor the per-shard read grant is there",
      }[source];
      const log = source === "none" ? this.opts.logger.warn : this.opts.logger.info;
      log.call(this.opts.logger, { type: key, source, before }, `deletes of this dependent type are checked by ${how}`);
      this.opts.onSourceChange?.();
    }
    return answer;
  }
}

/**
 * Neither read works. The index's last good view (`seen`) goes along, so decision.ts refuses only where it would have
 * for the index's own answer: nowhere for a rule that never protected, where the dependents were for a revocation.
 */
function noReadAccess(fromIndex: Unavailable, err: unknown): Unavailable {
  // Names no type: the dependent type is another provider's (fromIndex.detail, for the log, names it).
  const answer = unavailable(
    "no-read-access",
    "the webhook may read these dependents neither through their provider's index consent nor with the per-shard read grant",
    `${fromIndex.detail}; live list: ${err instanceof Error ? err.message : String(err)}`,
  );
  return fromIndex.seen ? { ...answer, seen: fromIndex.seen } : answer;
}

/**
 * `dependency_webhook_lookup_sources{source}`: how many dependent types each source checks, by their last lookup or
 * probe. A count per source and not a series per type, so the series stay three however many types rule authors
 * add; which type is checked how is in the log (a line at each change) and in each rule's DependentsIndexed condition.
 */
export function registerLookupSourceMetric(registry: Registry, finder: HybridDependentFinder): void {
  new Gauge({
    name: "dependency_webhook_lookup_sources",
    help: "Dependent types by what checks them at their last lookup or probe (--lookup=auto): index, live, or none (no read access)",
    labelNames: ["source"],
    registers: [registry],
    collect() {
      const counts = new Map<LookupSource, number>(LOOKUP_SOURCES.map((s) => [s, 0]));
      for (const source of finder.lastSources().values()) counts.set(source, (counts.get(source) ?? 0) + 1);
      for (const [source, n] of counts) this.set({ source }, n);
    },
  });
}

/** `--lookup`: index (provider consent), live (per-shard grant), or auto (whichever the installation gave). */
export type LookupMode = "index" | "live" | "auto";

/**
 * The finder of a lookup mode; `index` is undefined in live mode (no index runs), `base` is where live lists. In auto
 * mode, `reporter` (the index's) reports what protects each type too, so a rule's status says when live lists do;
 * before each report it probes the types whose index is forbidden (probe.ts), so it says so before any DELETE.
 */
export function finderFor(
  mode: LookupMode,
  index: DependentsIndex | undefined,
  base: RestClient,
  logger: Logger,
  registry: Registry,
  reporter?: Pick<IndexReporter, "changed" | "reportLookups">,
  clock: Clock = realClock,
): DependentFinder {
  const live = new LiveDependentFinder({ base });
  if (!index) return live;
  if (mode !== "auto") return index;
  const hybrid = new HybridDependentFinder({
    index,
    live,
    indexState: (key) => reportOf(index.health())[key],
    logger: logger.child({ part: "lookup" }),
    clock,
    ...(reporter ? { onSourceChange: () => reporter.changed() } : {}),
  });
  const prober = proberFor(hybrid, () => reportOf(index.health()), base, logger.child({ part: "probe" }), clock);
  reporter?.reportLookups(
    () => hybrid.lastSources(),
    () => prober.run(),
  );
  registerLookupSourceMetric(registry, hybrid);
  return hybrid;
}

/** Probes the types whose index is forbidden (no consent) through `base`, as live lookups read, for `hybrid`. */
export function proberFor(
  hybrid: HybridDependentFinder,
  report: () => IndexReport,
  base: RestClient,
  logger: Logger,
  clock: Clock,
): LookupProber {
  const forbidden = (s: IndexedTypeState): boolean => s.state === "failing" && s.reason === "Forbidden";
  return new LookupProber({
    probe: (path) => probeLiveRead(base, path),
    targets: () =>
      Object.entries(report()).flatMap(([key, s]) => {
        const target = forbidden(s) ? hybrid.probeTarget(key) : undefined;
        return target ? [target] : [];
      }),
    // "index" cannot be right for a type whose index is forbidden (a consent revoked since): probe it at once.
    learnedAt: (key) => (hybrid.lastSources().get(key) === "index" ? undefined : hybrid.learnedAt(key)),
    record: (key, source, startedAt) => hybrid.probed(key, source, startedAt),
    clock,
    logger,
  });
}
