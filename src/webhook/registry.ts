// The rule registry: what the webhook knows about DependencyRules, metadata only. It is rebuilt from the full list
// of rules every time anything changes (level-triggered), by a pure function, and then read by DELETE decisions.
//
// Reverse index: (provider logical cluster, protected group/resource) → rules, so a DELETE arriving at
// /validate/<provider> finds its rules in O(1), and two providers exporting the same group/resource never see each
// other's rules. The legacy /validate (no provider in the URL) matches by group/resource across all providers.
import { parseFieldPath, type FieldPath } from "../fieldpath/fieldpath.ts";
import {
  CLUSTER_ANNOTATION,
  ruleKeyString,
  type DependencyRule,
  type GroupResource,
  type LogicalClusterName,
} from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";

/** The dependent side of a rule: what gets listed in the consumer workspace, and its kind for messages. */
export interface DependentType {
  group: string;
  version: string;
  resource: string;
  kind: string;
}

/** One rule as seen from one protected (provider, group/resource): whose objects to list and where to look. */
export interface RuleEntry {
  /** `<rule cluster>/<rule name>`. */
  rule: string;
  dependent: DependentType;
  /** Every field path of this rule that points at this group/resource (usually one). */
  fieldPaths: readonly FieldPath[];
}

/** A dependency whose provider workspace could not be resolved: its group/resource is denied, never allowed. */
export interface UnresolvedDependency {
  rule: string;
  path: string;
  reason: string;
}

export interface RuleMatch {
  entries: readonly RuleEntry[];
  unresolved: readonly UnresolvedDependency[];
}

/** A rule or dependency left out of the registry, and why (logged by the caller). */
export interface RegistryProblem {
  rule: string;
  message: string;
}

export interface RuleRegistry {
  /** Rules registered with at least one dependency. */
  readonly ruleCount: number;
  /** Registered (rule, provider, group/resource) entries. */
  readonly entryCount: number;
  readonly problems: readonly RegistryProblem[];
  /** The rules protecting `gr` of `provider`; without a provider (legacy /validate), of any provider. */
  find(provider: LogicalClusterName | undefined, gr: GroupResource): RuleMatch;
}

/** What the caller knows about each apiExportRef.path; undefined means not resolved yet (treated as unresolved). */
export type PathResolutions = ReadonlyMap<string, Resolution>;

// DNS-1123-ish names: they end up in URL paths, so anything else is refused at registration.
const GROUP_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KIND_RE = /^[A-Za-z][A-Za-z0-9]*$/;

/** The provider workspace paths a set of rules refers to, for the caller to resolve before buildRegistry. */
export function referencedPaths(rules: readonly DependencyRule[]): string[] {
  const paths = new Set<string>();
  for (const rule of rules) {
    const deps: unknown = rule.spec?.dependencies;
    if (!Array.isArray(deps)) continue;
    for (const dep of deps as unknown[]) {
      const path = (dep as { apiExportRef?: { path?: unknown } } | null)?.apiExportRef?.path;
      if (typeof path === "string" && path !== "") paths.add(path);
    }
  }
  return [...paths].sort();
}

function checkDependent(d: unknown): DependentType | string {
  if (typeof d !== "object" || d === null) return "spec.dependent is missing";
  const { group, version, resource, kind } = d as Record<string, unknown>;
  if (typeof group !== "string" || (group !== "" && !GROUP_RE.test(group)))
    return `spec.dependent.group ${JSON.stringify(group)} is not an API group`;
  if (typeof version !== "string" || !NAME_RE.test(version))
    return `spec.dependent.version ${JSON.stringify(version)} is not an API version`;
  if (typeof resource !== "string" || !NAME_RE.test(resource))
    return `spec.dependent.resource ${JSON.stringify(resource)} is not a plural resource name`;
  if (typeof kind !== "string" || !KIND_RE.test(kind))
    return `spec.dependent.kind ${JSON.stringify(kind)} is not a kind`;
  return { group, version, resource, kind };
}

const grKey = (gr: GroupResource): string => `${gr.group}/${gr.resource}`;
// "|" cannot occur in a logical cluster name, a group or a resource, so keys never collide.
const providerKey = (provider: string, gr: GroupResource): string => `${provider}|${grKey(gr)}`;

type MutableEntry = RuleEntry & { fieldPaths: FieldPath[] };

/** Adds a rule's field path under `key`; one entry per rule per key, so a rule never causes the same list twice. */
function addEntry(
  index: Map<string, MutableEntry[]>,
  key: string,
  rule: string,
  dependent: DependentType,
  path: FieldPath,
) {
  const list = index.get(key) ?? [];
  const same = list.find((e) => e.rule === rule);
  if (!same) {
    list.push({ rule, dependent, fieldPaths: [path] });
    index.set(key, list);
    return true;
  }
  if (!same.fieldPaths.some((q) => q.source === path.source)) same.fieldPaths.push(path);
  return false;
}

/**
 * Builds the registry from every rule and the resolutions of their provider paths. Pure: same input, same registry.
 * Rules are processed in key order so entries (and therefore lookups and messages) come out in a stable order.
 */
export function buildRegistry(rules: readonly DependencyRule[], resolutions: PathResolutions): RuleRegistry {
  const byProvider = new Map<string, MutableEntry[]>();
  const byGroupResource = new Map<string, MutableEntry[]>();
  const unresolvedByGR = new Map<string, UnresolvedDependency[]>();
  const problems: RegistryProblem[] = [];
  const ruleKeys = new Set<string>();
  let entryCount = 0;

  const keyed = rules.map((rule) => {
    const cluster = rule.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? "";
    const name = rule.metadata?.name ?? "";
    return { rule, cluster, name, key: ruleKeyString({ cluster: cluster as LogicalClusterName, name }) };
  });
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

  for (const { rule, cluster, name, key } of keyed) {
    if (cluster === "" || name === "") {
      problems.push({
        rule: key,
        message: `rule has no ${cluster === "" ? CLUSTER_ANNOTATION + " annotation" : "name"}`,
      });
      continue;
    }
    const dependent = checkDependent(rule.spec?.dependent);
    if (typeof dependent === "string") {
      problems.push({ rule: key, message: dependent });
      continue;
    }
    const deps: unknown = rule.spec?.dependencies;
    if (!Array.isArray(deps)) {
      problems.push({ rule: key, message: "spec.dependencies is not a list" });
      continue;
    }
    (deps as unknown[]).forEach((raw, i) => {
      const where = `spec.dependencies[${i}]`;
      const dep = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
      const ref = (dep["apiExportRef"] ?? {}) as Record<string, unknown>;
      const group = dep["group"];
      const resource = dep["resource"];
      const path = ref["path"];
      const fieldPath = (dep["fieldRef"] as { path?: unknown } | undefined)?.path;
      if (typeof group !== "string" || (group !== "" && !GROUP_RE.test(group))) {
        problems.push({ rule: key, message: `${where}.group ${JSON.stringify(group)} is not an API group` });
        return;
      }
      if (typeof resource !== "string" || !NAME_RE.test(resource)) {
        problems.push({ rule: key, message: `${where}.resource ${JSON.stringify(resource)} is not a resource name` });
        return;
      }
      const parsed = parseFieldPath(typeof fieldPath === "string" ? fieldPath : "");
      if (!parsed.ok) {
        problems.push({ rule: key, message: `${where}.fieldRef.path: ${parsed.error}` });
        return;
      }
      const gr = { group, resource };
      const resolution = typeof path === "string" ? resolutions.get(path) : undefined;
      if (!resolution?.ok) {
        // Fail closed: without the provider we cannot index the entry, so its group/resource is denied everywhere.
        const reason =
          typeof path !== "string" || path === ""
            ? `${where}.apiExportRef.path is empty`
            : (resolution?.reason ?? `workspace ${path} not resolved yet`);
        const list = unresolvedByGR.get(grKey(gr)) ?? [];
        list.push({ rule: key, path: typeof path === "string" ? path : "", reason });
        unresolvedByGR.set(grKey(gr), list);
        ruleKeys.add(key);
        return;
      }
      if (addEntry(byProvider, providerKey(resolution.cluster, gr), key, dependent, parsed.path)) entryCount++;
      addEntry(byGroupResource, grKey(gr), key, dependent, parsed.path);
      ruleKeys.add(key);
    });
  }

  return {
    ruleCount: ruleKeys.size,
    entryCount,
    problems,
    find(provider, gr) {
      const entries =
        provider === undefined ? byGroupResource.get(grKey(gr)) : byProvider.get(providerKey(provider, gr));
      return { entries: entries ?? [], unresolved: unresolvedByGR.get(grKey(gr)) ?? [] };
    },
  };
}

/** A problem line for logs and rule authors: `rule root-cluster/vm-rule: spec.dependencies[0]…`. */
export function formatProblem(p: RegistryProblem): string {
  return `rule ${p.rule}: ${p.message}`;
}
