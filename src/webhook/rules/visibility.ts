// Which reviews the webhook cannot decide while it cannot see a shard's rules. Rules are listed per virtual-workspace
// endpoint (one per shard); a rule lives on the shard of its own workspace. When one endpoint's list/watch fails
// after the first full sync, the webhook keeps deciding with the last-known rules of the healthy endpoints, and
// refuses (503) only the reviews whose rules may come from the shard it cannot see:
//   - a (provider, group/resource) with a known rule listed from a failing endpoint: that rule may have changed or
//     gone, and the rules that shard may have gained are unknown;
//   - a (provider, group/resource) with no known rule at all, while some endpoint is failing: kcp only sends a review
//     for what a webhook configuration names, so a rule exists somewhere, perhaps on the shard not seen.
// A (provider, group/resource) whose known rules all come from healthy endpoints is decided as usual. Pure: no I/O,
// no clock; RuleSource (rules.ts) feeds it the endpoints' health and the rules' origins.
import { ruleKeyOf } from "../../api/rule.ts";
import { ruleKeyString, type GroupResource, type LogicalClusterName } from "../../api/types.ts";
import type { RuleMatch, RuleRegistry } from "./registry.ts";

/** What the source knows about where rules come from and which endpoints it cannot see now. */
export interface Visibility {
  /** Endpoint URL → why its rules cannot be seen now (the list/watch error); for the log only. */
  broken: ReadonlyMap<string, string>;
  /**
   * Rule key (`<cluster>/<name>`) → the endpoints it was listed from. Undefined when the watch cannot say: then
   * every known rule counts as possibly from a broken endpoint.
   */
  ruleEndpoints: ReadonlyMap<string, readonly string[]> | undefined;
}

/** Why the rules of one review cannot be trusted now. */
export interface Doubt {
  /** The failing endpoints involved (URLs, sorted): for the log, never for the deleter. */
  endpoints: string[];
  /** The known rules of this match listed from a failing endpoint (sorted); empty when no rule is known for it. */
  rules: string[];
}

/** A registry match that may carry a Doubt (`unseen`, with `why`: the log line); registry.ts declares the field. */
export type SourcedMatch = RuleMatch;

/** The Doubt of one match (the rules the registry found for a review's provider and group/resource), if any. */
export function inDoubt(match: RuleMatch, vis: Visibility): Doubt | undefined {
  if (vis.broken.size === 0) return undefined;
  if (match.entries.length === 0) return { endpoints: [...vis.broken.keys()].sort(), rules: [] };
  const endpoints = new Set<string>();
  const rules = new Set<string>();
  for (const entry of match.entries) {
    const from = vis.ruleEndpoints?.get(entry.rule);
    const failing = from === undefined ? [...vis.broken.keys()] : from.filter((e) => vis.broken.has(e));
    for (const e of failing) endpoints.add(e);
    if (failing.length > 0) rules.add(entry.rule);
  }
  return rules.size === 0 ? undefined : { endpoints: [...endpoints].sort(), rules: [...rules].sort() };
}

/** The log line for a doubt: which rules, which endpoints, and their errors. */
export function describeDoubt(doubt: Doubt, vis: Visibility): string {
  const why = doubt.endpoints.map((e) => `${e} (${vis.broken.get(e) ?? "failing"})`).join(", ");
  const what = doubt.rules.length
    ? `rules ${doubt.rules.join(", ")} were listed from`
    : "no known rule protects this resource, and a rule may exist on";
  return `${what} a virtual workspace endpoint whose DependencyRule list/watch is failing: ${why}`;
}

/**
 * The registry as RuleSource hands it out while an endpoint is broken: `find` marks a match in doubt with `unseen`,
 * which decision.ts refuses with 503 (reason rules-unseen) and a message that names no rule, workspace or URL; `why`
 * (rules, endpoints, errors) goes to the log only. Everything else is the registry's own (prototype delegation).
 */
export function withVisibility(registry: RuleRegistry, vis: Visibility): RuleRegistry {
  if (vis.broken.size === 0) return registry;
  const wrapped = Object.create(registry) as RuleRegistry;
  wrapped.find = (provider: LogicalClusterName | undefined, gr: GroupResource): SourcedMatch => {
    const match = registry.find(provider, gr);
    const doubt = inDoubt(match, vis);
    return doubt ? { ...match, unseen: { ...doubt, why: describeDoubt(doubt, vis) } } : match;
  };
  return wrapped;
}

/** The rules, and (when the watch can say) the endpoints each was listed from. */
export function listWithOrigins<T>(watch: { list(): T[]; listWithEndpoints?(): { endpoint: string; object: T }[] }): {
  rules: T[];
  origins: Map<string, string[]> | undefined;
} {
  const sourced = watch.listWithEndpoints?.();
  if (!sourced) return { rules: watch.list(), origins: undefined };
  const origins = new Map<string, string[]>();
  for (const { endpoint, object } of sourced) {
    const key = ruleKeyOf(object);
    if (!key) continue;
    const k = ruleKeyString(key);
    origins.set(k, [...(origins.get(k) ?? []), endpoint]);
  }
  return { rules: sourced.map((s) => s.object), origins };
}
