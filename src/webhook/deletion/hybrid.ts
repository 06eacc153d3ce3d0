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
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import { dependentTypeKey, type IndexedTypeState, type LookupSource } from "../../api/index-report.ts";
import { isApiError, type RestClient } from "../../kcp/rest.ts";
import type { Lookup } from "../admission.ts";
import type { DependentsIndex } from "./index/index.ts";
import { reportOf, type IndexReporter } from "./index/report.ts";
import { LiveDependentFinder } from "./live.ts";
import { unavailable, type DependentFinder, type FinderAnswer, type Unavailable } from "./finder.ts";

/** What protected a dependent type at its last lookup: the index, a live list, or nothing (no read access). */
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
}

export class HybridDependentFinder implements DependentFinder {
  private readonly opts: HybridFinderOptions;
  private readonly sources = new Map<string, LookupSource>();

  constructor(opts: HybridFinderOptions) {
    this.opts = opts;
  }

  async find(lookup: Lookup, limit: number, signal?: AbortSignal): Promise<FinderAnswer> {
    const key = dependentTypeKey(lookup.dependent);
    const fromIndex = await this.opts.index.find(lookup, limit, signal);
    if (fromIndex.ok) return this.answered(key, "index", fromIndex);
    // Over its budget, a consumer's own dependents are what is unreadable: a live list would read them all the same,
    // on every delete, and undo the budget that confines them to that workspace.
    if (fromIndex.reason === "unreadable") return fromIndex;
    const state = this.opts.indexState(key);
    const noConsent = state?.state === "failing" && state.reason === "Forbidden";
    try {
      return this.answered(key, "live", await this.opts.live.find(lookup, limit, signal));
    } catch (err) {
      if (!noConsent) return fromIndex;
      if (!isApiError(err, 403)) throw err;
      return this.answered(key, "none", noReadAccess(lookup, fromIndex, err));
    }
  }

  /** The source of each dependent type at its last lookup (for the metric). */
  lastSources(): ReadonlyMap<string, LookupSource> {
    return this.sources;
  }

  private answered(key: string, source: LookupSource, answer: FinderAnswer): FinderAnswer {
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
function noReadAccess(lookup: Lookup, fromIndex: Unavailable, err: unknown): Unavailable {
  const d = lookup.dependent;
  const what = `${d.resource}${d.group ? "." + d.group : ""}`;
  const answer = unavailable(
    "no-read-access",
    `the webhook may read ${what} neither through its provider's index consent nor with the per-shard read grant`,
    `${fromIndex.detail}; live list: ${err instanceof Error ? err.message : String(err)}`,
  );
  return fromIndex.seen ? { ...answer, seen: fromIndex.seen } : answer;
}

/** `dependency_webhook_lookup_source{type,source}`: 1 for what protected each dependent type at its last lookup. */
export function registerLookupSourceMetric(registry: Registry, finder: HybridDependentFinder): void {
  new Gauge({
    name: "dependency_webhook_lookup_source",
    help: "What checked each dependent type at its last lookup (--lookup=auto): index, live, or none (no read access)",
    labelNames: ["type", "source"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [type, source] of finder.lastSources())
        for (const s of LOOKUP_SOURCES) this.set({ type, source: s }, s === source ? 1 : 0);
    },
  });
}

/** `--lookup`: index (provider consent), live (per-shard grant), or auto (whichever the installation gave). */
export type LookupMode = "index" | "live" | "auto";

/**
 * The finder of a lookup mode; `index` is undefined in live mode (no index runs), `base` is where live lists. In auto
 * mode, `reporter` (the index's) reports what protects each type too, so a rule's status says when live lists do.
 */
export function finderFor(
  mode: LookupMode,
  index: DependentsIndex | undefined,
  base: RestClient,
  logger: Logger,
  registry: Registry,
  reporter?: Pick<IndexReporter, "changed" | "reportLookups">,
): DependentFinder {
  const live = new LiveDependentFinder({ base });
  if (!index) return live;
  if (mode !== "auto") return index;
  const hybrid = new HybridDependentFinder({
    index,
    live,
    indexState: (key) => reportOf(index.health())[key],
    logger: logger.child({ part: "lookup" }),
    ...(reporter ? { onSourceChange: () => reporter.changed() } : {}),
  });
  reporter?.reportLookups(() => hybrid.lastSources());
  registerLookupSourceMetric(registry, hybrid);
  return hybrid;
}
