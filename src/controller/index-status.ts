// The DependentsIndexed condition: whether the webhook can read a rule's dependents, and what that means for
// enforcement (docs/architecture.md, "Blast radius"). The webhook decides from the reason as the controller keeps it in
// its verdicts (src/api/verdicts.ts), so it survives restarts.
import type { Condition } from "../api/types.ts";
import type { IndexedTypeState } from "../api/index-report.ts";
import type { ParsedRule } from "../api/rule.ts";

export type Verdict = Omit<Condition, "type" | "lastTransitionTime" | "observedGeneration">;

/** How long an author's revoked index consent keeps failing closed before the rule counts as not enforced. */
export const REVOCATION_GRACE_MS = 30 * 60_000;

/** Live lookups protect where the index cannot (auto mode); not in PROTECTED: that set is where the index worked. */
const LIVE_LOOKUP = "LiveLookup";
const PROTECTED = new Set(["Indexed", "IndexRevoked", "IndexLost", "IndexResyncing"]);
const NOT_ENFORCED_SINCE = "this rule refuses no DELETE until then";

/**
 * From the webhook's index report (src/api/index-report.ts): can the webhook read this rule's dependents? The webhook
 * decides from the reason kept in the verdicts (src/api/verdicts.ts): Indexed, LiveLookup, IndexRevoked, IndexLost and
 * IndexResyncing mean "it protected: fail closed where its dependents were"; IndexForbidden, IndexFailing and
 * IndexRevocationExpired mean "not enforced". `previous` is this condition as the controller last kept it (its verdict,
 * never the rule's status), so a revocation's start survives restarts.
 */
export function dependentsIndexed(
  rule: ParsedRule,
  index: IndexedTypeState | { state: "missing" },
  previous: Condition | undefined,
  clock: { now: string; graceMs: number },
): Verdict {
  const d = rule.dependent;
  const what = d ? `${d.resource}.${d.group} through APIExport ${d.apiExportName}` : "the dependent type";
  const fix = `apply deploy/rbac/provider-index.yaml in this workspace (DEPENDENT_EXPORT=${d?.apiExportName ?? "<export>"})`;
  const protecting = previous !== undefined && PROTECTED.has(previous.reason);
  if (index.state === "ready") return { status: "True", reason: "Indexed", message: `the webhook indexes ${what}` };
  if (liveLookup(index, previous))
    return {
      status: "True",
      reason: LIVE_LOOKUP,
      message: `protected by live lookups of ${what} (the per-shard read grant); to use the index instead, ${fix}`,
    };
  if (index.state === "syncing" || index.state === "missing") {
    if (protecting)
      return { status: "Unknown", reason: "IndexResyncing", message: `the webhook is listing ${what} again` };
    return index.state === "syncing"
      ? { status: "Unknown", reason: "IndexSyncing", message: `the webhook is listing ${what}; not enforced yet` }
      : { status: "Unknown", reason: "NotReported", message: "the webhook has not reported on this rule yet" };
  }
  if (index.reason !== "Forbidden") {
    return protecting
      ? {
          status: "False",
          reason: "IndexLost",
          message: `the webhook cannot read ${what} (see its log): DELETEs in the consumer workspaces that held them are refused (503) until it can`,
        }
      : {
          status: "False",
          reason: "IndexFailing",
          message: `not enforced: the webhook has never read ${what} (see its log); ${NOT_ENFORCED_SINCE}`,
        };
  }
  // The webhook's probe (or a lookup) found no live read access either: say so, that grant is the other way in.
  const neither =
    index.lookup === "none" ? " (nor does it hold the per-shard read grant, deploy/rbac/system-admin.yaml)" : "";
  return forbidden(what, fix + neither, previous, clock);
}

/**
 * Auto mode: the index cannot answer but live lists (the webhook's per-shard read grant) may read the type, as the
 * webhook's probe of a forbidden type found (before any DELETE, then every few minutes) or its last lookup did, so the
 * rule protects. A report that names no lookup (a probe that failed, or a webhook older than the field) keeps this
 * verdict rather than flapping to "not enforced": the next probe or lookup says whether live lists still may read,
 * and until then a replica that cannot read fails closed, the safe side.
 */
function liveLookup(index: IndexedTypeState | { state: "missing" }, previous: Condition | undefined): boolean {
  const lookup = index.state === "missing" ? undefined : index.lookup;
  return lookup === "live" || (lookup === undefined && previous?.reason === LIVE_LOOKUP);
}

/** Consent missing: never given (not enforced), or revoked (fails closed for the grace, then not enforced). */
function forbidden(
  what: string,
  fix: string,
  previous: Condition | undefined,
  clock: { now: string; graceMs: number },
): Verdict {
  const reason = previous?.reason;
  const revokedAt = reason === "IndexRevoked" ? previous?.lastTransitionTime : undefined;
  const wasIndexed = reason === "Indexed" || reason === "IndexLost" || reason === "IndexResyncing";
  if (reason === "IndexRevocationExpired" || (revokedAt === undefined && !wasIndexed))
    return reason === "IndexRevocationExpired"
      ? { status: "False", reason, message: previous!.message }
      : {
          status: "False",
          reason: "IndexForbidden",
          message: `not enforced: the webhook may not read ${what}: ${fix}; ${NOT_ENFORCED_SINCE}`,
        };
  const start = Date.parse(revokedAt ?? clock.now);
  const until = new Date(start + clock.graceMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (Date.parse(clock.now) >= start + clock.graceMs)
    return {
      status: "False",
      reason: "IndexRevocationExpired",
      message: `not enforced since ${until}: the index consent for ${what} was revoked; ${fix}`,
    };
  return {
    status: "False",
    reason: "IndexRevoked",
    message:
      `the index consent for ${what} was revoked: DELETEs in the consumer workspaces that held them are refused ` +
      `(503) until ${until}, then this rule is not enforced; ${fix}`,
  };
}
