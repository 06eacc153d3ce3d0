// The admission pipeline's vocabulary, in one module every stage imports and none re-exports: what arrives (the
// AdmissionRequest fields we read), what a lookup asks and finds, and what goes back (a Decision, built only through
// the constructors below). The pipeline runs one way: server → review → handler → decision → finder.
import type { FieldPath } from "../fieldpath/fieldpath.ts";
import type { Enforcement } from "../api/schema.ts";
import type { GroupVersionResource } from "../api/rule.ts";
import type { LogicalClusterName } from "../api/types.ts";

/**
 * The dependent side of a rule as lookups need it: what to list in the consumer workspace, its kind for messages,
 * and the APIExport that serves it (the rule's own workspace and `spec.dependent.apiExportName`), whose virtual
 * workspace the dependents index watches.
 */
export type DependentType = GroupVersionResource & {
  kind: string;
  apiExportName: string;
  exportCluster: LogicalClusterName;
};

/** The fields of an admission.k8s.io/v1 AdmissionRequest the webhook reads. */
export interface AdmissionRequest {
  uid: string;
  operation: string;
  resource: { group: string; version: string; resource: string };
  /** Empty for the per-item calls of a DELETECOLLECTION: read the name from oldObject. */
  name?: string;
  namespace?: string;
  userInfo?: { username?: string };
  oldObject?: unknown;
  /** The object as written, for CREATE and UPDATE (the rule admission check). */
  object?: unknown;
  dryRun?: boolean;
}

/** Why a decision came out the way it did; also the `reason` label of the decisions metric. */
export type DecisionReason =
  | "not-delete"
  | "skip-protection"
  | "no-rules"
  | "no-dependents"
  | "referenced"
  | "warned"
  | "not-synced"
  | "bad-request"
  | "unresolved-rule"
  | "rules-unseen"
  | "lookup-error"
  | "index-unavailable"
  | "internal-error"
  | "rule-valid"
  | "rule-unverified"
  | "invalid-rule";

export type StatusReason = "Conflict" | "BadRequest" | "Invalid" | "InternalError" | "ServiceUnavailable";

/** One blocker as a machine-readable metav1.StatusCause (kcp passes `status.details.causes` through to the client). */
export interface Cause {
  reason: "ReferencedBy";
  /** `Kind/name`, or `Kind/namespace/name` for a namespaced dependent of a cluster-scoped object. */
  message: string;
  /** The field path in the dependent that names the object. */
  field: string;
}

export type Denial = {
  allowed: false;
  reason: DecisionReason;
  code: number;
  statusReason: StatusReason;
  message: string;
  /** Every blocker found (deduplicated, sorted), for logs; the message lists at most MAX_LISTED_BLOCKERS. */
  blockers?: string[];
  /** The blockers for clients (`kubectl dependencies why`), up to MAX_CAUSES. */
  causes?: Cause[];
  /** For the log only: rule keys, workspaces and kcp error texts the deleter must not be shown. */
  detail?: string;
  /** The rules whose dependents refused it, for per-rule metrics and logs (never shown to the deleter). */
  rules?: string[];
};

export type Decision =
  | {
      allowed: true;
      reason: DecisionReason;
      warnings?: string[];
      /** Warn-mode rules that would have refused it (metrics and logs only). */
      rules?: string[];
    }
  | Denial;

export function allow(reason: DecisionReason, warnings?: string[], rules?: string[]): Decision {
  return {
    allowed: true,
    reason,
    ...(warnings && warnings.length > 0 ? { warnings } : {}),
    ...(rules && rules.length > 0 ? { rules } : {}),
  };
}

export function deny(
  reason: DecisionReason,
  code: number,
  statusReason: StatusReason,
  message: string,
  extra: Pick<Denial, "blockers" | "causes" | "detail" | "rules"> = {},
): Denial {
  return { allowed: false, reason, code, statusReason, message, ...extra };
}

// The named constructors: every decision the webhook makes is one of these, so a reason always comes with the same
// code and status reason. `deny` stays for stubs that need an arbitrary answer.

export const badRequest = (message: string): Denial => deny("bad-request", 400, "BadRequest", message);

/** A failure of our own: the deleter sees a retry hint, the log gets `detail`. */
export const internalError = (message: string, detail: string): Denial =>
  deny("internal-error", 500, "InternalError", message, { detail });

/** 503: the webhook cannot decide yet and says so (registry loading, a rule pending or unseen, the index not ready). */
export const serviceUnavailable = (
  reason: "not-synced" | "rules-unseen" | "unresolved-rule" | "index-unavailable",
  message: string,
  detail?: string,
): Denial => deny(reason, 503, "ServiceUnavailable", message, detail !== undefined ? { detail } : {});

/** 500: listing dependents failed, so the object might be referenced (fail closed). */
export const lookupFailed = (message: string, detail: string): Denial =>
  deny("lookup-error", 500, "InternalError", message, { detail });

/** 409: the object is still referenced. */
export const referenced = (message: string, extra: Pick<Denial, "blockers" | "causes" | "rules">): Denial =>
  deny("referenced", 409, "Conflict", message, extra);

/** 422: a DependencyRule that cannot be right. */
export const invalidRule = (message: string): Denial => deny("invalid-rule", 422, "Invalid", message);

/** allowed; denied (409, the object is referenced); errored (any other deny: bad input, not ready, lookup failure). */
export function outcomeOf(decision: Decision): "allowed" | "denied" | "errored" {
  if (decision.allowed) return "allowed";
  return decision.code === 409 ? "denied" : "errored";
}

/** How many blockers a deny message names before "and N more". */
export const MAX_LISTED_BLOCKERS = 10;
/** How many blockers a dry-run DELETE lists in `causes` (what `kubectl dependencies why` shows). */
export const MAX_CAUSES = 1000;

/** One list to run in the consumer workspace: objects of `dependent` that name `name` at any field path. */
export interface Lookup {
  consumer: LogicalClusterName;
  dependent: DependentType;
  /** Namespace to list in; undefined lists across all namespaces (cluster-scoped target). */
  namespace?: string;
  name: string;
  fieldPaths: readonly FieldPath[];
  /** Keys of the rules that asked for this lookup, for the log. */
  rules: readonly string[];
  /** Set when the dependent type is the target's own type: the target never counts as its own blocker. */
  self?: { namespace?: string; name: string };
  /** The enforcement of every rule in `rules`: Deny and Warn rules never share a lookup. */
  enforcement: Enforcement;
  /** What the rules' statuses say of their dependents index (registry.ts IndexTrust), when the finder cannot answer. */
  trust?: "protected" | "not-enforced" | "unknown";
}

/** A dependent that references the target, and where. */
export interface Dependent {
  namespace?: string;
  name: string;
  /** The first of the lookup's field paths at which it names the target. */
  field: string;
}

/**
 * What one lookup found. `complete` is false when the finder stopped early (more than it was asked for);
 * `notBound` when the dependent type is not served there (404).
 */
export type LookupResult =
  | { ok: true; dependents: Dependent[]; complete: boolean; notBound?: boolean }
  /**
   * `error` is for the log. `unavailable` (with a message safe to show) when the finder knows it cannot answer yet,
   * e.g. the dependents index of the type is still syncing: the DELETE is refused with 503 rather than 500.
   */
  | { ok: false; error: string; unavailable?: string; seen?: UnavailableSeen };

/**
 * Where the finder last saw dependents of the type it cannot read now (finder.ts): whether it ever had a complete
 * view of the type in this process, and whether the lookup's consumer workspace held any of them then.
 */
export interface UnavailableSeen {
  everSynced: boolean;
  consumerSeen: boolean;
}
