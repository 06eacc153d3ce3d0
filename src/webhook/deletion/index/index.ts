// The dependents index as a finder (`--lookup=index`): answers each lookup from the watches of watches.ts, so a
// DELETE is decided without a round trip to kcp (but for the second look of confirm.ts before a denial). A lookup
// the index cannot answer truthfully (type not watched yet, not listed on every shard, a list or watch failing, a
// path not indexed yet) is answered "unavailable": the handler refuses that DELETE with a 503 and decides every
// other one.
import type { Logger } from "pino";
import { dependentTypeKey } from "../../../api/index-report.ts";
import { MAX_CAUSES, type Lookup, type UnavailableSeen } from "../../admission.ts";
import {
  found,
  unavailable,
  type DependentFinder,
  type FinderAnswer,
  type FoundDependents,
  type Unavailable,
} from "../finder.ts";
import type { UnreadableReason } from "./budget.ts";
import type { IndexLedger } from "./ceiling.ts";
import type { RuleRegistry } from "../../rules/registry.ts";
import { CONFIRM_MAX_BYTES, confirmDependents, type ConfirmResult } from "./confirm.ts";
import { ConfirmRate, type ConfirmRateOptions } from "./confirm-rate.ts";
import { realClock } from "../../../util/clock.ts";
import { NotIndexedError } from "./store.ts";
import { TypeWatches, type IndexWatch, type IndexWatchFactory, type TypeHealth, type TypeWatch } from "./watches.ts";

/**
 * What the deleter is told while the index cannot answer. The type is another provider's (the rule's dependent, which
 * the deleter's workspace may not even bind): naming it would tell any consumer which provider's rule covers the
 * resource it deletes and that its index is failing. So these name no type; `detail` (the log) does.
 */
export const INDEX_STARTING = "the dependents index is starting";
export const INDEX_SYNCING = "the dependents index is still syncing";
export const INDEX_NOT_READABLE = "the dependents index is not readable";

/** A second look at a found dependent must not eat the DELETE's whole lookup budget (8 s); a timeout keeps it. */
const CONFIRM_TIMEOUT_MS = 2_000;

export interface DependentsIndexOptions {
  /** Builds the watch of one dependent type (exportWatchFactory in production). */
  watch: IndexWatchFactory;
  logger: Logger;
  /** Told when anything changed (e.g. to refresh the report). */
  onChange?: () => void;
  /** The replica's index memory ceiling the stores charge (ceiling.ts), read by the metrics. */
  ledger?: IndexLedger;
  /** Second looks per consumer workspace (confirm-rate.ts); the real clock, 5 per second, 20 at once by default. */
  confirmRate?: Partial<ConfirmRateOptions>;
}

export class DependentsIndex implements DependentFinder {
  private readonly watches: TypeWatches;
  private readonly rate: ConfirmRate;
  readonly ledger: IndexLedger | undefined;

  constructor(opts: DependentsIndexOptions) {
    this.watches = new TypeWatches(opts);
    this.ledger = opts.ledger;
    this.rate = new ConfirmRate({ clock: realClock, perSecond: 5, burst: 20, ...opts.confirmRate });
  }

  /** Makes the watches match the registry's dependent types (idempotent; call it with every new registry). */
  follow(registry: RuleRegistry): void {
    this.watches.follow(registry);
  }

  async find(lookup: Lookup, wanted: number, signal?: AbortSignal): Promise<FinderAnswer> {
    // Reading the index is cheap, so it finds up to MAX_CAUSES even when fewer are asked for: the message can then say
    // "and 2 more" rather than "and at least 1 more".
    const limit = Math.max(wanted, MAX_CAUSES);
    const key = dependentTypeKey(lookup.dependent);
    const slot = this.watches.slot(key);
    if (!slot) return unavailable("starting", INDEX_STARTING, `${key}: no watch for this type yet`, NEVER_SEEN);
    let problem: Answer | undefined;
    for (const w of slot.next ? [slot.current, slot.next] : [slot.current]) {
      const answer = answerFrom(w.watch, lookup, limit);
      if (answer.kind === "found") return this.confirm(w.watch, answer, lookup, signal);
      if (answer.kind === "unreadable") return unreadableAnswer(describe(lookup), key, answer.why);
      if (!problem || (problem.kind === "not-indexed" && answer.kind !== "not-indexed")) problem = answer;
    }
    if (problem?.kind === "failing")
      return unavailable("failing", INDEX_NOT_READABLE, `${key}: ${problem.detail}`, seenBy(slot, lookup));
    return unavailable(
      problem?.kind === "not-indexed" ? "not-indexed" : "syncing",
      INDEX_SYNCING,
      `${key}: not every endpoint has listed the type with these field paths yet`,
      seenBy(slot, lookup),
    );
  }

  /** Reads of found dependents before a denial (confirm.ts), by result, since the start. */
  readonly confirmations: Record<Exclude<ConfirmResult, "limited">, number> = { kept: 0, gone: 0, error: 0 };
  /** Found dependents not read again because their workspace had spent its rate of second looks (kept). */
  confirmationsLimited = 0;

  private async confirm(
    watch: IndexWatch,
    answer: Extract<Answer, { kind: "found" }>,
    lookup: Lookup,
    signal: AbortSignal | undefined,
  ): Promise<FoundDependents> {
    if (answer.endpoint === undefined) return answer.found;
    const endpoint = answer.endpoint;
    const read = (path: string): Promise<unknown> =>
      watch.read(endpoint, lookup.consumer, path, {
        timeoutMs: CONFIRM_TIMEOUT_MS,
        maxBodyBytes: CONFIRM_MAX_BYTES,
        ...(signal ? { signal } : {}),
      });
    const tally = (r: ConfirmResult): void => {
      if (r === "limited") this.confirmationsLimited++;
      else this.confirmations[r]++;
    };
    return confirmDependents(answer.found, lookup, read, tally, (n) => this.rate.take(lookup.consumer, n));
  }

  /** One line per watched type: ready, syncing, or failing with the errors. */
  health(): TypeHealth[] {
    return this.watches.health();
  }

  /** Dependents indexed, over all types and endpoints. */
  size(): number {
    return this.watches.size();
  }

  /** Dependents held unreadable and the consumer workspaces (per type) holding any, by reason (budget.ts). */
  unreadable(): ReturnType<TypeWatches["unreadable"]> {
    return this.watches.unreadable();
  }

  stop(): void {
    this.watches.stop();
  }
}

type Answer =
  | { kind: "found"; found: FoundDependents; endpoint?: string }
  | { kind: "unreadable"; why: UnreadableReason }
  | { kind: "failing"; detail: string }
  | { kind: "syncing" }
  | { kind: "not-indexed" };

/**
 * The answer of one watch (all shards of one type). A consumer workspace lives on one shard: if a healthy endpoint
 * holds any of its objects, that endpoint alone answers, whatever the other shards are doing. Otherwise "none" is
 * true only when every endpoint is known, listed and healthy; else the consumer might be on the shard we cannot see.
 */
function answerFrom(watch: IndexWatch, lookup: Lookup, limit: number): Answer {
  try {
    const states = watch.endpointStates();
    const home = states.find((e) => e.synced && e.store.hasCluster(lookup.consumer));
    if (home) {
      if (home.error !== undefined) return { kind: "failing", detail: `${home.endpoint}: ${home.error}` };
      const r = home.store.find(lookup, limit);
      if (r.unreadable) return { kind: "unreadable", why: r.unreadable };
      return { kind: "found", found: found(r.dependents, r.complete), endpoint: home.endpoint };
    }
    const failing = watch.failing();
    if (failing.length > 0)
      return { kind: "failing", detail: failing.map((f) => `${f.endpoint}: ${f.error}`).join("; ") };
    if (!watch.endpointsKnown() || states.some((e) => !e.synced)) return { kind: "syncing" };
    // Checks the paths are indexed even when nothing is there to find.
    for (const e of states) e.store.find(lookup, limit);
    return { kind: "found", found: found([], true) };
  } catch (err) {
    if (err instanceof NotIndexedError) return { kind: "not-indexed" };
    throw err;
  }
}

/**
 * Only this workspace's lookups of this type get it, and it names no object: the other objects are nobody's business.
 * It names the type, unlike the answers above: the deleter's own workspace holds the dependents it cannot read (as a
 * 409 names the deleter's own blockers), and removing them is the way out.
 */
function unreadableAnswer(what: string, key: string, why: UnreadableReason): Unavailable {
  const cause =
    why === "names"
      ? "a dependent names more objects than the index keeps"
      : why === "budget"
        ? "this workspace has more dependents than the index keeps"
        : "this workspace is past its share of the index's memory";
  return unavailable(
    "unreadable",
    `the index cannot read every ${what} of this workspace (${cause})`,
    `${key}: ${why}`,
  );
}

const NEVER_SEEN: UnavailableSeen = { everSynced: false, consumerSeen: false };

/**
 * The last good view of this type in this process, for decision.ts to refuse only where dependents may be. A watch
 * that once listed everything it followed and has no endpoint left (none was ever bound, or a tenant's slice now names
 * only URLs the allow-list refuses) knows no consumer holds dependents it can see: that must not read as "never
 * listed", which refuses every DELETE the rule gates, in every consumer (hostile-provider e2e).
 */
function seenBy(slot: { current: TypeWatch }, lookup: Lookup): UnavailableSeen {
  const states = slot.current.watch.endpointStates();
  // With endpoints, all of them must have listed (a new shard's first list is not a view yet); with none left, a watch
  // that once listed everything knows they held nothing it can still see.
  const everSynced = states.length > 0 ? states.every((e) => e.synced) : slot.current.listed === true;
  return { everSynced, consumerSeen: states.some((e) => e.synced && e.store.hasCluster(lookup.consumer)) };
}

function describe(lookup: Lookup): string {
  const d = lookup.dependent;
  return `${d.resource}${d.group ? "." + d.group : ""}`;
}
