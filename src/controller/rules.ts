// Turns DependencyRule objects as read from kcp into what the controller acts on. Rules are checked against the
// schema again: kcp validates on write only, so objects stored under the original's looser schema (an empty
// dependencies list) or an older one can still be read. Bad input becomes a list of problems for the rule's status,
// never an exception.
import { DEPENDENCY_SCHEMA, DEPENDENT_SCHEMA } from "../api/schema.ts";
import {
  CLUSTER_ANNOTATION,
  type GroupResource,
  type LogicalClusterName,
  type RuleKey,
  type WorkspacePath,
} from "../api/types.ts";
import { formatFieldError, validate } from "../api/validate.ts";
import { parseFieldPath } from "../fieldpath/fieldpath.ts";

export interface GroupVersionResource extends GroupResource {
  version: string;
}

/** One usable `spec.dependencies[]` entry: its provider workspace gets a webhook for this resource. */
export interface ParsedDependency {
  index: number;
  path: WorkspacePath;
  target: GroupVersionResource;
}

export interface ParsedRule {
  key: RuleKey;
  generation?: number;
  /** Undefined when `spec.dependent` is unusable; then the rule protects nothing. */
  dependent?: GroupResource & { kind: string };
  /** The valid entries only; invalid ones are in `problems`. */
  dependencies: ParsedDependency[];
  /** Length of `spec.dependencies` as written, valid or not (the Dependencies printer column). */
  dependencyCount: number;
  /** Deterministic `field: message` lines; empty for a valid rule. */
  problems: string[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The rule's key from `metadata.name` and the `kcp.io/cluster` annotation; undefined if either is missing. */
export function ruleKeyOf(obj: unknown): RuleKey | undefined {
  if (!isObject(obj) || !isObject(obj["metadata"])) return undefined;
  const meta = obj["metadata"];
  const name = meta["name"];
  const annotations = meta["annotations"];
  const cluster = isObject(annotations) ? annotations[CLUSTER_ANNOTATION] : undefined;
  if (typeof name !== "string" || name === "" || typeof cluster !== "string" || cluster === "") return undefined;
  return { cluster: cluster as LogicalClusterName, name };
}

/** Errors of one dependency entry; a field path the parser refuses is reported in the parser's words. */
function dependencyProblems(entry: unknown, field: string): string[] {
  const errors = validate(DEPENDENCY_SCHEMA, entry, field);
  const pathField = `${field}.fieldRef.path`;
  const path = isObject(entry) && isObject(entry["fieldRef"]) ? entry["fieldRef"]["path"] : undefined;
  const parsed = typeof path === "string" ? parseFieldPath(path) : undefined;
  if (parsed && !parsed.ok) {
    return [...errors.filter((e) => e.field !== pathField).map(formatFieldError), `${pathField}: ${parsed.error}`];
  }
  return errors.map(formatFieldError);
}

export function parseRule(obj: unknown): ParsedRule | undefined {
  const key = ruleKeyOf(obj);
  if (!key || !isObject(obj)) return undefined;
  const meta = obj["metadata"] as Record<string, unknown>;
  const generation = typeof meta["generation"] === "number" ? meta["generation"] : undefined;
  const rule: ParsedRule = {
    key,
    ...(generation !== undefined ? { generation } : {}),
    dependencies: [],
    dependencyCount: 0,
    problems: [],
  };
  const spec = obj["spec"];
  if (!isObject(spec)) {
    rule.problems.push("spec: Required value");
    return rule;
  }

  const dependentErrors = validate(
    { required: ["dependent"], properties: { dependent: DEPENDENT_SCHEMA } },
    spec,
    "spec",
  );
  if (dependentErrors.length > 0) {
    rule.problems.push(...dependentErrors.map(formatFieldError));
  } else {
    const d = spec["dependent"] as Record<string, string>;
    rule.dependent = { group: d["group"] ?? "", resource: d["resource"] ?? "", kind: d["kind"] ?? "" };
  }

  const list = spec["dependencies"];
  if (!Array.isArray(list)) {
    rule.problems.push("spec.dependencies: Required value");
    return rule;
  }
  rule.dependencyCount = list.length;
  if (list.length === 0) rule.problems.push("spec.dependencies: Invalid value: 0: should have at least 1 items");
  list.forEach((entry: unknown, index) => {
    const problems = dependencyProblems(entry, `spec.dependencies[${index}]`);
    if (problems.length > 0) {
      rule.problems.push(...problems);
      return;
    }
    const e = entry as { apiExportRef: { path: string }; group: string; version: string; resource: string };
    rule.dependencies.push({
      index,
      path: e.apiExportRef.path as WorkspacePath,
      target: { group: e.group, version: e.version, resource: e.resource },
    });
  });
  // Without a usable dependent the webhook cannot find dependents, so nothing of this rule may be installed.
  if (!rule.dependent) rule.dependencies = [];
  return rule;
}
