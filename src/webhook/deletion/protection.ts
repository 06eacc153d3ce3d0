// What protects a dependent type's deletes: the one place that decides it (pure). The finder of `--lookup=auto`
// (hybrid.ts) asks it at each lookup what to try next, the probe (probe.ts) asks it which types to probe, and the
// index report (index/report.ts: what the controller turns into DependentsIndexed and Ready) publishes what it says,
// so what a DELETE meets and what the rule's status says come from the same table and cannot disagree.
//
// Inputs, per type: the lookup mode (--lookup), the index's state of the type (ready, syncing, failing: Forbidden
// when the provider's consent is missing, Error otherwise; none while it is not watched), and in auto mode what the
// type's last lookup or probe found (`learned`: index, live or none, and when). The controller's verdicts (a rule
// that protected fails closed where its dependents were) and --enforce-unverified-rules act per rule, not per type:
// they are the registry's and the controller's (rules/registry.ts, controller/index-status.ts), from the report.
//
//   mode   index state          learned            by     why              reported   probe
//   live   (none)               -                  live   live-mode        -          no
//   index  ready                -                  index  indexed          -          no
//   index  syncing              -                  none   index-syncing    -          no
//   index  failing Forbidden    -                  none   no-consent       -          no
//   index  failing Error        -                  none   index-failing    -          no
//   auto   any                  live               live   live-grant       live       when forbidden and stale
//   auto   any                  none               none   no-read-access   none       when forbidden and stale
//   auto   ready                index or -         index  indexed          learned    no
//   auto   syncing/Error        index or -         none   index-syncing…   learned    no
//   auto   failing Forbidden    index or -         none   not-probed       learned    yes (index cannot be right)
//
// "reported" is the index report's `lookup` of the type (src/api/index-report.ts): only auto mode has one, and it is
// what the type's last lookup or probe found, so the controller's LiveLookup verdict is exactly "live lists answer".
import type { IndexedTypeState, LookupSource } from "../../api/index-report.ts";

/** `--lookup`: index (provider consent), live (per-shard grant), or auto (whichever the installation gave). */
export type LookupMode = "index" | "live" | "auto";

/** The index's state of a type, without what the report adds. */
export type IndexState =
  { state: "ready" } | { state: "syncing" } | { state: "failing"; reason: "Forbidden" | "Error" };

/** What a type's last lookup or probe found (auto mode), and when that lookup or probe began. */
export interface Learned {
  source: LookupSource;
  at: number;
}

export type ProtectionWhy =
  | "live-mode"
  | "indexed"
  | "index-syncing"
  | "index-failing"
  | "no-consent"
  | "live-grant"
  | "no-read-access"
  | "not-probed";

export interface TypeProtection {
  /** What checks the type's deletes now: the index, live lists, or nothing. */
  by: LookupSource;
  why: ProtectionWhy;
  /** The index report's `lookup` for the type (auto mode only). */
  reported?: LookupSource;
  /** Auto mode: probe the type's live read access now (its index is forbidden, and what is known is stale). */
  probe: boolean;
}

/** How long a type's source, once known (from a probe or a lookup), stands before the next probe of it. */
export const PROBE_INTERVAL_MS = 5 * 60_000;

const forbidden = (s: IndexState | undefined): boolean => s?.state === "failing" && s.reason === "Forbidden";

function fromIndex(index: IndexState | undefined): Pick<TypeProtection, "by" | "why"> {
  if (index?.state === "ready") return { by: "index", why: "indexed" };
  if (index?.state === "failing")
    return { by: "none", why: index.reason === "Forbidden" ? "no-consent" : "index-failing" };
  return { by: "none", why: "index-syncing" };
}

/** The decision for one type (the table above); `now` and `intervalMs` time the probe. */
export function protectionOf(
  mode: LookupMode,
  index: IndexState | undefined,
  learned: Learned | undefined,
  now: number,
  intervalMs = PROBE_INTERVAL_MS,
): TypeProtection {
  if (mode === "live") return { by: "live", why: "live-mode", probe: false };
  if (mode === "index") return { ...fromIndex(index), probe: false };
  const reported = learned ? { reported: learned.source } : {};
  // "index" cannot be right for a type whose index is forbidden (a consent revoked since): probe it at once.
  const stale = !learned || learned.source === "index" || now - learned.at >= intervalMs;
  const probe = forbidden(index) && stale;
  if (learned?.source === "live") return { by: "live", why: "live-grant", ...reported, probe };
  if (learned?.source === "none") return { by: "none", why: "no-read-access", ...reported, probe };
  const own = fromIndex(index);
  return { ...own, ...(own.why === "no-consent" ? { why: "not-probed" as const } : {}), ...reported, probe };
}

/** At a lookup, after the index could not answer (`reason`): whether its answer stands or a live list is tried. */
export function afterIndexMiss(mode: LookupMode, reason: string): "stands" | "try-live" {
  // Over its budget, a consumer's own dependents are what is unreadable: a live list would read them all the same,
  // on every delete, and undo the budget that confines them to that workspace.
  return mode === "auto" && reason !== "unreadable" ? "try-live" : "stands";
}

/**
 * At a lookup, after the live list failed too: where the index is forbidden (no consent), a 403 means nothing may
 * read the type ("no-read-access") and any other failure fails closed (thrown: 500, as in live mode); elsewhere the
 * live list only ever replaced an answer the index could not give, so the index's answer stands.
 */
export function afterLiveFailure(index: IndexState | undefined, liveForbidden: boolean): "index" | "none" | "throw" {
  if (!forbidden(index)) return "index";
  return liveForbidden ? "none" : "throw";
}

/** The index report's `lookup` of each type (auto mode): the decision's `reported`, over the index's states. */
export function reportedLookups(
  mode: LookupMode,
  states: Readonly<Record<string, IndexedTypeState>>,
  learned: (key: string) => Learned | undefined,
  now: number,
): Map<string, LookupSource> {
  const out = new Map<string, LookupSource>();
  for (const [key, state] of Object.entries(states)) {
    const reported = protectionOf(mode, state, learned(key), now).reported;
    if (reported) out.set(key, reported);
  }
  return out;
}
