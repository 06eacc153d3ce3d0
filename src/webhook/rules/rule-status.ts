// What the controller wrote on a rule's status that the webhook's registry acts on. The controller is the one writer
// of these conditions; the webhook only reads them, so a verdict survives a webhook restart.
import { asRecord } from "../../util/json.ts";

/** Condition the controller sets on a rule whose references it checked against kcp (see src/api/references.ts). */
const REFERENCES_CONDITION = "ReferencesValid";
export const DEPENDENT_INVALID_REASON = "DependentInvalid";

/**
 * True when the controller found this generation's dependent type not served by the rule's own workspace: the rule
 * is not enforced (it could only ever list a type that is not there, or the wrong kind). One writer: the controller.
 */
export function dependentRejected(obj: unknown): boolean {
  const o = asRecord(obj);
  const generation = asRecord(o?.["metadata"])?.["generation"];
  const conditions = asRecord(o?.["status"])?.["conditions"];
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c: unknown) => {
    const cond = asRecord(c);
    return (
      cond?.["type"] === REFERENCES_CONDITION &&
      cond["status"] === "False" &&
      cond["reason"] === DEPENDENT_INVALID_REASON &&
      cond["observedGeneration"] === generation
    );
  });
}

/** The reason of a rule's current condition `type`, when it has one. */
function conditionReason(obj: unknown, type: string, currentOnly: boolean): string | undefined {
  const o = asRecord(obj);
  const generation = asRecord(o?.["metadata"])?.["generation"];
  const conditions = asRecord(o?.["status"])?.["conditions"];
  if (!Array.isArray(conditions)) return undefined;
  const cond = conditions.map(asRecord).find((c) => c?.["type"] === type);
  if (!cond || (currentOnly && cond["observedGeneration"] !== generation)) return undefined;
  return typeof cond["reason"] === "string" ? cond["reason"] : undefined;
}

/** Written by the controller when the rule's author declined the read-only claims: the rule was never checked. */
export const CHECKS_DECLINED_REASON = "ChecksDeclined";

/**
 * What the rule's DependentsIndexed condition says, as the webhook needs it when its index cannot answer:
 * `protected` (the index, or live lists, worked for this rule, possibly on another replica: fail closed where
 * dependents may be),
 * `not-enforced` (it never worked, or the author's revocation outlived its grace: decide as if the rule were absent),
 * `unknown` (no verdict yet: only this replica's own index can tell).
 */
export type IndexTrust = "protected" | "not-enforced" | "unknown";

/**
 * DependentsIndexed reasons (src/controller/index-status.ts) by what they mean for enforcement. LiveLookup: auto
 * mode, the index cannot be read but live lists (the per-shard read grant) protect the rule's dependents.
 */
export const INDEX_PROTECTED_REASONS: readonly string[] = [
  "Indexed",
  "LiveLookup",
  "IndexRevoked",
  "IndexLost",
  "IndexResyncing",
];
export const INDEX_NOT_ENFORCED_REASONS: readonly string[] = [
  "IndexForbidden",
  "IndexFailing",
  "IndexRevocationExpired",
];

export function indexTrust(obj: unknown): IndexTrust {
  const reason = conditionReason(obj, "DependentsIndexed", false);
  if (reason === undefined) return "unknown";
  if (INDEX_PROTECTED_REASONS.includes(reason)) return "protected";
  return INDEX_NOT_ENFORCED_REASONS.includes(reason) ? "not-enforced" : "unknown";
}

/** True when the controller could not check this generation because its author declined the read-only claims. */
export function checksDeclined(obj: unknown): boolean {
  return conditionReason(obj, REFERENCES_CONDITION, true) === CHECKS_DECLINED_REASON;
}
