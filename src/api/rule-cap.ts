// Rules per author: a workspace (the rule's logical cluster, its author) may have at most `cap` DependencyRules
// enforced. The rule admission webhook refuses one past the cap at apply; since that can be bypassed (the webhook
// down, rules that existed before the cap, a lowered cap), the controller installs nothing for a rule past it and says
// so on its status, and the webhook's registry ignores it. Both ask this one model, so they agree on which rules are
// over: the oldest win (creationTimestamp, then name; a rule without a timestamp counts as the newest), which is
// stable, since neither changes over a rule's life.
import { ruleKeyString, type RuleKey } from "./types.ts";
import { compareStrings } from "../util/json.ts";

/** The default of --max-rules-per-workspace (docs/operations.md, "Sizing", says why). */
export const DEFAULT_MAX_RULES_PER_WORKSPACE = 200;

/** What decides a rule's place in its author's queue. */
export interface CapCandidate {
  key: RuleKey;
  /** metadata.creationTimestamp (RFC 3339, UTC, seconds: compared as a string). */
  created?: string | undefined;
}

/** Older first; at the same second, by name. Undefined timestamps sort last (a rule being created has none yet). */
export function compareForCap(a: CapCandidate, b: CapCandidate): number {
  if (a.created !== b.created) {
    if (a.created === undefined) return 1;
    if (b.created === undefined) return -1;
    return compareStrings(a.created, b.created);
  }
  return compareStrings(a.key.name, b.key.name);
}

/** The metadata.creationTimestamp of a rule object, if it has one. */
export function createdOf(obj: unknown): string | undefined {
  const meta = (obj as { metadata?: { creationTimestamp?: unknown } } | undefined)?.metadata;
  return typeof meta?.creationTimestamp === "string" ? meta.creationTimestamp : undefined;
}

/**
 * Every author's rules in cap order, kept as rules come and go: adding or removing one costs a binary search and
 * one array splice in its author's queue, and reports the rules whose side of the cap changed (at most one other).
 */
export class AuthorCaps {
  private readonly cap: number;
  /** Author (logical cluster) → its rules, sorted by compareForCap. */
  private readonly queues = new Map<string, CapCandidate[]>();
  /** Rule key → the candidate as added (its created time decides where it is). */
  private readonly byKey = new Map<string, CapCandidate>();

  constructor(cap: number) {
    this.cap = cap;
  }

  static of(rules: Iterable<CapCandidate>, cap: number): AuthorCaps {
    const caps = new AuthorCaps(cap);
    for (const r of rules) caps.add(r);
    return caps;
  }

  /** Whether the rule is among its author's `cap` oldest (an unknown rule is not). */
  within(key: string): boolean {
    const c = this.byKey.get(key);
    return c !== undefined && this.position(c) < this.cap;
  }

  /** How many rules the author has. */
  count(author: string): number {
    return this.queues.get(author)?.length ?? 0;
  }

  /** Where `c` is (or would go) in its author's queue. */
  position(c: CapCandidate): number {
    const queue = this.queues.get(c.key.cluster) ?? [];
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareForCap(queue[mid]!, c) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Adds a rule (replacing one of the same key); returns the keys of other rules that moved past the cap. */
  add(c: CapCandidate): string[] {
    const key = ruleKeyString(c.key);
    const moved = this.byKey.has(key) ? this.remove(key) : [];
    const queue = this.queues.get(c.key.cluster) ?? [];
    this.queues.set(c.key.cluster, queue);
    const at = this.position(c);
    queue.splice(at, 0, c);
    this.byKey.set(key, c);
    const pushed = at < this.cap && queue.length > this.cap ? [ruleKeyString(queue[this.cap]!.key)] : [];
    return [...moved, ...pushed].filter((k) => k !== key);
  }

  /** Removes a rule; returns the key of the rule that moved within the cap, if one did. */
  remove(key: string): string[] {
    const c = this.byKey.get(key);
    if (!c) return [];
    const queue = this.queues.get(c.key.cluster)!;
    const at = this.position(c);
    queue.splice(at, 1);
    this.byKey.delete(key);
    if (queue.length === 0) this.queues.delete(c.key.cluster);
    return at < this.cap && queue.length >= this.cap ? [ruleKeyString(queue[this.cap - 1]!.key)] : [];
  }
}

/** The message on a rule past its author's cap (its status, and the registry's problem line). */
export function overCapMessage(cap: number): string {
  return (
    `not enforced: its workspace has more than ${cap} DependencyRules (--max-rules-per-workspace); ` +
    `only the ${cap} oldest are enforced`
  );
}
