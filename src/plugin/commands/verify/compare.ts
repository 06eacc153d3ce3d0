// `kubectl dependencies verify`, the pure part: what the rules say blocks each object against what kcp's dry-run
// DELETE answered. Every object the rules see referenced must be refused naming exactly those dependents; every
// refusal must be explained by a rule. No I/O here: the listings and the answers are gathered by run.ts.
import { WEBHOOK_NAME } from "../../../api/types.ts";
import type { Blocker, DeleteAnswer } from "../../causes.ts";
import { objectId, type ObjectRef } from "../../objects.ts";
import type { Reference } from "../../references.ts";

/** One object of a dependency type, as listed in the workspace. */
export interface VerifyObject extends ObjectRef {
  /** Break glass is set: the webhook allows its delete whatever references it. */
  skipProtection: boolean;
}

/** A blocker the rules expect: a dependent naming the object, through which field, by which rule. */
export interface ExpectedBlocker {
  kind: string;
  namespace?: string;
  name: string;
  field: string;
  rule: string;
}

export type MismatchKind = "unprotected" | "missing-blockers" | "stale-blockers" | "blockers-differ";

export interface Mismatch {
  kind: MismatchKind;
  object: VerifyObject;
  /** Every blocker the rules expect. */
  expected: ExpectedBlocker[];
  /** Expected blockers the refusal did not name (all of them when the delete was allowed). */
  missing: ExpectedBlocker[];
  /** Blockers the refusal named that no rule explains. */
  unexplained: Blocker[];
  /** kcp's answer: 200 for an allowed dry run, else the refusal's code and message. */
  answer: { status: number; message?: string };
}

/** An object whose dry run answered neither "allowed" nor a refusal naming blockers (503, RBAC, another webhook). */
export interface Unverified {
  object: VerifyObject;
  status: number;
  message: string;
}

export type Finding = { ok: false; mismatch: Mismatch } | { ok: false; unverified: Unverified };
export type Verdict = { ok: true } | Finding;

/** A blocker's identity as the webhook writes it (decision.ts blockerId): the namespace only for cluster-scoped objects. */
export function blockerKey(b: { kind: string; namespace?: string; name: string }, object: VerifyObject): string {
  return object.namespace === undefined && b.namespace !== undefined
    ? `${b.kind}/${b.namespace}/${b.name}`
    : `${b.kind}/${b.name}`;
}

/** The references to each object, by objectId; only references to objects that exist block anything. */
export function expectedByObject(refs: readonly Reference[]): Map<string, ExpectedBlocker[]> {
  const out = new Map<string, ExpectedBlocker[]>();
  for (const r of refs) {
    if (r.state !== "exists") continue;
    const key = objectId(r.to);
    const list = out.get(key) ?? [];
    const b: ExpectedBlocker = { kind: r.from.kind, name: r.from.name, field: r.field, rule: r.rule };
    if (r.from.namespace !== undefined) b.namespace = r.from.namespace;
    list.push(b);
    out.set(key, list);
  }
  return out;
}

/** One object's expected blockers against its dry run's answer. Pure. */
export function verdictFor(
  object: VerifyObject,
  expectedAll: readonly ExpectedBlocker[],
  answer: DeleteAnswer,
): Verdict {
  // Gone since the listing: nothing to verify (run.ts does not count it).
  if (answer.outcome === "gone") return { ok: true };
  // Break glass: the webhook allows the delete whatever references it, so nothing is expected to block.
  const expected = object.skipProtection ? [] : [...expectedAll];
  if (answer.outcome === "allowed") {
    if (expected.length === 0) return { ok: true };
    return mismatch("unprotected", object, expected, expected, [], { status: 200 });
  }
  const { refusal } = answer;
  const message = refusal.message;
  if (refusal.blockers.length === 0 || refusal.webhook !== WEBHOOK_NAME)
    return { ok: false, unverified: { object, status: answer.status, message } };
  const named = new Set(refusal.blockers.map((b) => blockerKey(b, object)));
  const wanted = new Set(expected.map((b) => blockerKey(b, object)));
  const unexplained = refusal.blockers.filter((b) => !wanted.has(blockerKey(b, object)));
  // A refusal that lists only some blockers (past the webhook's cap) cannot show that one is missing.
  const missing = refusal.complete ? expected.filter((b) => !named.has(blockerKey(b, object))) : [];
  if (unexplained.length === 0 && missing.length === 0) return { ok: true };
  const kind: MismatchKind =
    unexplained.length > 0 && missing.length > 0
      ? "blockers-differ"
      : unexplained.length > 0
        ? "stale-blockers"
        : "missing-blockers";
  return mismatch(kind, object, expected, missing, unexplained, { status: answer.status, message });
}

function mismatch(
  kind: MismatchKind,
  object: VerifyObject,
  expected: ExpectedBlocker[],
  missing: ExpectedBlocker[],
  unexplained: Blocker[],
  answer: Mismatch["answer"],
): Verdict {
  return { ok: false, mismatch: { kind, object, expected, missing, unexplained, answer } };
}

export interface VerifyReport {
  workspace: string;
  /** The rules compared against, `<workspace>:<name>`; Warn rules never refuse, so they expect no blocker. */
  rules: string[];
  /** Objects of the rules' dependency types that were dry-run deleted. */
  checked: number;
  /** Of those, how many the rules say are referenced (skip-protection ones excluded). */
  referenced: number;
  mismatches: Mismatch[];
  unverified: Unverified[];
}

/** Exit code: 1 a mismatch (a definite problem), else 2 an object could not be verified, else 0. */
export function exitCodeOf(r: VerifyReport): 0 | 1 | 2 {
  if (r.mismatches.length > 0) return 1;
  return r.unverified.length > 0 ? 2 : 0;
}

/**
 * Keeps the findings of a first pass that a second pass confirms (same object, still a finding): a dependent
 * created or deleted between the listing and the dry run is a race, not a broken protection.
 */
export function confirmed(first: readonly Verdict[], second: ReadonlyMap<string, Verdict>): Finding[] {
  const out: Finding[] = [];
  for (const v of first) {
    if (v.ok) continue;
    const obj = "mismatch" in v ? v.mismatch.object : v.unverified.object;
    const again = second.get(objectId(obj));
    if (again && !again.ok) out.push(again);
  }
  return out;
}
