// THE place a DELETE is decided. Pure steps around the only I/O (listing dependents, done by the handler):
//   planLookups(request, rules)        → an immediate decision, or the lookups needed;
//   clusterWideRetries(plan, results)  → lookups to repeat across namespaces (cluster-scoped dependent types);
//   decide(plan, results)              → allow, or deny with a code, a message and the blockers as causes.
// Nothing here reads the network, the clock or a logger, so every branch is a table test.
import type { FieldPath } from "../../fieldpath/fieldpath.ts";
import type { Enforcement } from "../../api/schema.ts";
import { compareStrings } from "../../util/json.ts";
import {
  allow,
  lookupFailed,
  MAX_CAUSES,
  MAX_LISTED_BLOCKERS,
  type AdmissionRequest,
  type Cause,
  type Decision,
  type Dependent,
  type Lookup,
  type LookupResult,
  referenced,
  serviceUnavailable,
} from "../admission.ts";
import { dependentTypeKey } from "../../api/index-report.ts";
import type { IndexTrust, RuleMatch } from "../rules/registry.ts";
import { readNamed, targetOf, type Named, type Target } from "./target.ts";

export type Plan =
  | { kind: "decided"; decision: Decision }
  | {
      kind: "lookup";
      target: Target;
      lookups: Lookup[];
      /** How many dependents each lookup needs to find: a dry run lists them all (up to MAX_CAUSES) as causes. */
      limit: number;
    };
export type LookupPlan = Extract<Plan, { kind: "lookup" }>;

/** 503 while a rule for this resource may be on a shard the webhook cannot see; names no rule, workspace or URL. */
export function unseenMessage(resource: string, name: string): string {
  return `cannot check ${resource}/${name}: a dependency rule for ${resource} is on a kcp shard the webhook cannot reach right now, retry later`;
}

export const NOT_SYNCED_MESSAGE = "dependency webhook is starting: rule registry not yet synced, retry later";

const decided = (decision: Decision): Plan => ({ kind: "decided", decision });

/** Rules sharing a lookup: one that protected makes it fail closed; all must be not enforced to ignore it. */
function strongerTrust(a: IndexTrust, b: IndexTrust): IndexTrust {
  if (a === "protected" || b === "protected") return "protected";
  return a === "not-enforced" && b === "not-enforced" ? "not-enforced" : "unknown";
}

/**
 * Whether a lookup the finder could not answer may still refuse the DELETE (docs/architecture.md, "Blast radius").
 * Not when its rules are not enforced (never indexed, or the author's revocation outlived its grace); not when this
 * process had a complete view and the consumer held none of these dependents then (a workspace that first gets one
 * during the outage is the trade); not when the index never worked here nor anywhere the status knows of.
 */
export function mayRefuse(lookup: Lookup, result: Extract<LookupResult, { ok: false }>): boolean {
  const seen = result.seen;
  if (!seen) return true;
  if (lookup.trust === "not-enforced") return false;
  if (seen.everSynced) return seen.consumerSeen;
  return lookup.trust === "protected";
}

/** One list per dependent type and enforcement, however many rules ask for it. */
function lookupsFor(target: Target, group: string, entries: RuleMatch["entries"]): Lookup[] {
  const { namespace, name } = target;
  const lookups = new Map<string, Lookup & { fieldPaths: FieldPath[]; rules: string[] }>();
  for (const entry of entries) {
    const d = entry.dependent;
    const key = `${dependentTypeKey(d)}/${d.kind}/${entry.enforcement}`;
    const existing = lookups.get(key);
    if (existing) {
      for (const p of entry.fieldPaths)
        if (!existing.fieldPaths.some((q) => q.source === p.source)) existing.fieldPaths.push(p);
      if (!existing.rules.includes(entry.rule)) existing.rules.push(entry.rule);
      const trust = strongerTrust(existing.trust ?? "unknown", entry.index ?? "unknown");
      if (trust === "unknown") delete existing.trust;
      else existing.trust = trust;
      continue;
    }
    const sameType = d.group === group && d.resource === target.resource;
    lookups.set(key, {
      ...(entry.index && entry.index !== "unknown" ? { trust: entry.index } : {}),
      consumer: target.consumer,
      dependent: d,
      ...(namespace ? { namespace } : {}),
      name,
      fieldPaths: [...entry.fieldPaths],
      rules: [entry.rule],
      enforcement: entry.enforcement,
      ...(sameType ? { self: { ...(namespace ? { namespace } : {}), name } } : {}),
    });
  }
  return [...lookups.values()];
}

/**
 * Step one. `rules` is the registry's match for this request's provider and group/resource, or "not-synced" while
 * the registry is still loading; `named` is what the review names, when the caller has read it already. Returns a
 * decision when no lookup is needed.
 */
export function planLookups(
  request: AdmissionRequest,
  rules: RuleMatch | "not-synced",
  named: Named = readNamed(request),
): Plan {
  if (request.operation !== "DELETE") return decided(allow("not-delete"));
  if (rules === "not-synced") return decided(serviceUnavailable("not-synced", NOT_SYNCED_MESSAGE));
  const target = targetOf(request, named);
  if ("allowed" in target) return decided(target);
  if (rules.unseen) {
    const message = unseenMessage(target.resource, target.name);
    return decided(serviceUnavailable("rules-unseen", message, rules.unseen.why));
  }
  if (rules.entries.length === 0) return decided(allow("no-rules"));
  return {
    kind: "lookup",
    target,
    lookups: lookupsFor(target, request.resource.group, rules.entries),
    limit: request.dryRun ? MAX_CAUSES : MAX_LISTED_BLOCKERS,
  };
}

/**
 * The lookups to run again across all namespaces: a namespaced list answers 404 when the dependent type is
 * cluster-scoped (a namespaced type answers an empty list even for a missing namespace), and such dependents can
 * name the target too, so they are listed cluster-wide, never skipped. Empty when none is needed.
 */
export function clusterWideRetries(plan: LookupPlan, results: readonly LookupResult[]): Map<number, Lookup> {
  const retries = new Map<number, Lookup>();
  plan.lookups.forEach((lookup, i) => {
    const r = results[i];
    if (r?.ok && r.notBound && lookup.namespace !== undefined) {
      const { namespace: _ns, ...clusterWide } = lookup;
      retries.set(i, clusterWide);
    }
  });
  return retries;
}

/** `Kind/name`; `Kind/namespace/name` when a cluster-scoped target is referenced from a namespace (as the original). */
export function blockerId(kind: string, dependent: Dependent, target: Target): string {
  return target.namespace === undefined && dependent.namespace !== undefined
    ? `${kind}/${dependent.namespace}/${dependent.name}`
    : `${kind}/${dependent.name}`;
}

/** `cannot delete vpcs/my-vpc: still referenced by A, B and 3 more`; `blockers` sorted and deduplicated. */
export function denyMessage(target: Target, blockers: readonly string[], complete: boolean): string {
  const listed = blockers.slice(0, MAX_LISTED_BLOCKERS).join(", ");
  const rest = blockers.length - MAX_LISTED_BLOCKERS;
  const more = rest > 0 ? ` and ${complete ? "" : "at least "}${rest} more` : "";
  return `cannot delete ${target.resource}/${target.name}: still referenced by ${listed}${more}`;
}

/** What the lookups of one enforcement found. */
interface Findings {
  /** For the log only: the rules, the dependent types and kcp's errors. */
  errors: string[];
  /** For each failure the finder could explain (index not ready): its message. */
  unavailable: string[];
  /** blocker → the field that names the target */
  blockers: Map<string, string>;
  complete: boolean;
  rules: Set<string>;
}

function collect(plan: LookupPlan, results: readonly LookupResult[], enforcement: Enforcement): Findings {
  const f: Findings = {
    errors: [],
    unavailable: [],
    blockers: new Map(),
    complete: true,
    rules: new Set(),
  };
  plan.lookups.forEach((lookup, i) => {
    if (lookup.enforcement !== enforcement) return;
    const result = results[i];
    const d = lookup.dependent;
    const what = `${d.resource}${d.group ? "." + d.group : ""}/${d.version}`;
    // Decided as if the rule were absent: nobody else's delete waits for this rule's fault.
    if (result !== undefined && !result.ok && !mayRefuse(lookup, result)) return;
    if (result === undefined || !result.ok) {
      f.errors.push(`rule ${lookup.rules.join(", ")}: listing ${what}: ${result ? result.error : "no result"}`);
      if (result?.unavailable) f.unavailable.push(result.unavailable);
      return;
    }
    if (!result.complete) f.complete = false;
    if (result.dependents.length > 0) for (const r of lookup.rules) f.rules.add(r);
    for (const dep of result.dependents) {
      const id = blockerId(d.kind, dep, plan.target);
      if (!f.blockers.has(id)) f.blockers.set(id, dep.field);
    }
  });
  return f;
}

/**
 * Step three: the lookups' results (same order as plan.lookups) → the decision. Deny rules refuse; Warn rules only
 * ever add warnings (a failed Warn lookup too: Warn never refuses). A 503 or 500 goes to the deleter, perhaps a
 * consumer who never heard of the rule: it names the object and its type, never the dependent type, rule or
 * workspace behind it (those go to `detail`, the log). A 409 names its blockers: objects in the deleter's workspace.
 */
export function decide(plan: LookupPlan, results: readonly LookupResult[]): Decision {
  const { target } = plan;
  const denying = collect(plan, results, "Deny");
  // Fail closed: a dependent we could not list might reference the target.
  if (denying.errors.length > 0 && denying.unavailable.length === denying.errors.length) {
    const why = [...new Set(denying.unavailable)].sort(compareStrings).join("; ");
    const message = `cannot check dependents of ${target.resource}/${target.name} yet: ${why}, retry in a few seconds`;
    return serviceUnavailable("index-unavailable", message, denying.errors.join("; "));
  }
  if (denying.errors.length > 0) {
    const message = `cannot check dependents of ${target.resource}/${target.name}: listing them in this workspace failed, retry later`;
    return lookupFailed(message, denying.errors.join("; "));
  }
  if (denying.blockers.size > 0) {
    const sorted = [...denying.blockers.keys()].sort(compareStrings);
    const causes: Cause[] = sorted
      .slice(0, MAX_CAUSES)
      .map((id) => ({ reason: "ReferencedBy", message: id, field: denying.blockers.get(id) ?? "" }));
    return referenced(denyMessage(target, sorted, denying.complete), {
      blockers: sorted,
      causes,
      rules: [...denying.rules].sort(compareStrings),
    });
  }
  const warning = collect(plan, results, "Warn");
  const warnings: string[] = [];
  if (warning.blockers.size > 0) {
    const sorted = [...warning.blockers.keys()].sort(compareStrings);
    warnings.push(`a rule in Warn mode would refuse this: ${denyMessage(target, sorted, warning.complete)}`);
  }
  if (warning.errors.length > 0)
    warnings.push(`a rule in Warn mode could not check ${target.resource}/${target.name}: listing failed`);
  if (warnings.length === 0) return allow("no-dependents");
  return allow("warned", warnings, [...warning.rules].sort(compareStrings));
}
