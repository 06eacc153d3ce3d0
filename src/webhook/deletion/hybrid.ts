// The finder of `--lookup=auto` (the default): the dependents index where the rule's provider consented to it, and
// the live lookup where the webhook holds the per-shard read grant instead (deploy/rbac/system-admin.yaml, the grant
// the Go original's installations already have). An installation coming from the original, whose providers never
// applied deploy/rbac/provider-index.yaml, is therefore protected from its first DELETE, and one that follows
// getting-started (consent, no shard grant) never makes a live read.
//
// Per lookup: the index first; when it cannot answer, protection.ts decides whether its answer stands or a live list
// is tried (afterIndexMiss), and after a failed live list, what stands (afterLiveFailure): a live answer, the index's
// own, "unavailable" with reason "no-read-access" (nothing protects), or the error (fail closed, 500). What answered
// is the type's source (index, live, none), kept in the LookupBook the index report and the prober read too. A type
// whose index is forbidden also has its source probed without a DELETE (probe.ts), so the status tells before the
// first one.
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import { dependentTypeKey, type IndexedTypeState, type LookupSource } from "../../api/index-report.ts";
import { isApiError, type RestClient } from "../../kcp/rest.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import type { Lookup } from "../admission.ts";
import type { DependentsIndex } from "./index/index.ts";
import { reportOf } from "./index/report.ts";
import { LiveDependentFinder } from "./live.ts";
import { LookupBook } from "./lookup-book.ts";
import { LookupProber, probeLiveRead } from "./probe.ts";
import { afterIndexMiss, afterLiveFailure, protectionOf, type LookupMode } from "./protection.ts";
import { unavailable, type DependentFinder, type FinderAnswer, type Unavailable } from "./finder.ts";

/** What protects a dependent type, by its last lookup or probe: the index, a live list, or nothing (no read access). */
export type { LookupSource, LookupMode };

export const LOOKUP_SOURCES: readonly LookupSource[] = ["index", "live", "none"];

export interface HybridFinderOptions {
  index: DependentFinder;
  live: DependentFinder;
  /** The index's state of a dependent type (by dependentTypeKey); undefined while it is not watched. */
  indexState: (key: string) => IndexedTypeState | undefined;
  logger: Logger;
  /** Where what each lookup found is kept (shared with the prober and the index report); a fresh one by default. */
  book?: LookupBook;
  clock?: Clock;
}

export class HybridDependentFinder implements DependentFinder {
  readonly book: LookupBook;
  private readonly opts: HybridFinderOptions;

  constructor(opts: HybridFinderOptions) {
    this.opts = opts;
    this.book = opts.book ?? new LookupBook({ logger: opts.logger, ...(opts.clock ? { clock: opts.clock } : {}) });
  }

  async find(lookup: Lookup, limit: number, signal?: AbortSignal): Promise<FinderAnswer> {
    const key = dependentTypeKey(lookup.dependent);
    const at = this.book.clock.now();
    const found = (source: LookupSource, answer: FinderAnswer): FinderAnswer => {
      this.book.looked(key, source, at, lookup.consumer);
      return answer;
    };
    const fromIndex = await this.opts.index.find(lookup, limit, signal);
    if (fromIndex.ok) return found("index", fromIndex);
    if (afterIndexMiss("auto", fromIndex.reason) === "stands") return fromIndex;
    try {
      return found("live", await this.opts.live.find(lookup, limit, signal));
    } catch (err) {
      const next = afterLiveFailure(this.opts.indexState(key), isApiError(err, 403));
      if (next === "index") return fromIndex;
      if (next === "throw") throw err;
      return found("none", noReadAccess(fromIndex, err));
    }
  }

  /** The source of each dependent type at its last lookup or probe (for the metric and the index report). */
  lastSources(): ReadonlyMap<string, LookupSource> {
    return this.book.sources();
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

/**
 * The finder of a lookup mode; `index` is undefined in live mode (no index runs), `base` is where live lists. In auto
 * mode, `book` is where lookups record what answered: the one the index report and the prober read (index/start.ts).
 */
export function finderFor(
  mode: LookupMode,
  index: DependentsIndex | undefined,
  base: RestClient,
  logger: Logger,
  registry: Registry,
  book?: LookupBook,
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
    book: book ?? new LookupBook({ clock, logger: logger.child({ part: "lookup" }) }),
    clock,
  });
  registerLookupSourceMetric(registry, hybrid);
  return hybrid;
}

/**
 * Probes, through `base` as live lookups read, the types the decision says to (protection.ts: forbidden index, what
 * is known stale), recording what it finds in `book`; `states` is the index's state of each type.
 */
export function proberFor(
  book: LookupBook,
  states: () => Readonly<Record<string, IndexedTypeState>>,
  base: RestClient,
  logger: Logger,
): LookupProber {
  return new LookupProber({
    probe: (path) => probeLiveRead(base, path),
    targets: () => {
      const now = book.clock.now();
      return Object.entries(states()).flatMap(([key, s]) => {
        const target = protectionOf("auto", s, book.learned(key), now).probe ? book.probeTarget(key) : undefined;
        return target ? [target] : [];
      });
    },
    record: (key, source, startedAt) => book.probed(key, source, startedAt),
    clock: book.clock,
    logger,
  });
}
