// The one reading of a DependencyRule, shared by the controller, the webhook and the rule admission check. Objects as
// kcp serves them are checked against the schema again (kcp validates on write only, so objects stored under the
// original's looser schema or an older one can still be read), then against what the schema cannot say: a field path
// the parser refuses, a dependency that is the dependent's own name. Bad input becomes a list of problems, never an
// exception; the valid dependencies of a partly valid rule are still used, so a stale object protects what it can.
import { parseFieldPath, type FieldPath } from "../fieldpath/fieldpath.ts";
import { isRecord } from "../util/json.ts";
import { parseLocal, type ParsedLocalDependency } from "./local-target.ts";
import { DEPENDENCY_SCHEMA, DEPENDENT_SCHEMA, ENFORCEMENTS, MAX_DEPENDENCIES, type Enforcement } from "./schema.ts";
import { CLUSTER_ANNOTATION, type GroupVersionResource, type RuleKey, type WorkspacePath } from "./types.ts";
import { formatFieldError, validate, type FieldError } from "./validate.ts";
import { isWorkspacePath, MAX_PROVIDER_PATH_SEGMENTS, parseLogicalClusterName, parseWorkspacePath } from "./wire.ts";

export type { GroupVersionResource } from "./types.ts";
export type { ParsedLocalDependency } from "./local-target.ts";

/** `spec.dependent`, valid: the type whose objects are listed in consumer workspaces. */
export interface ParsedDependent extends GroupVersionResource {
  kind: string;
  /** The APIExport in the rule's own workspace that must serve this type. */
  apiExportName: string;
}

/** One valid `spec.dependencies[]` entry: its provider workspace gets a webhook for `target`. */
export interface ParsedDependency {
  /** Position in `spec.dependencies`, for messages. */
  index: number;
  /** `apiExportRef.path`: the dependency provider's workspace. */
  path: WorkspacePath;
  /** `apiExportRef.name`: the APIExport there that must serve `target`. */
  exportName: string;
  target: GroupVersionResource;
  fieldPath: FieldPath;
}

export interface ParsedRule {
  key: RuleKey;
  generation?: number;
  /** Undefined when `spec.dependent` is unusable; then the rule protects nothing. */
  dependent?: ParsedDependent;
  /** The valid entries only; invalid ones are in `problems`. Empty when the dependent is unusable. */
  dependencies: ParsedDependency[];
  /** The valid local targets (entries without `apiExportRef`); empty when the dependent is unusable. */
  localDependencies: ParsedLocalDependency[];
  /** Length of `spec.dependencies` as written, valid or not (the Dependencies printer column). */
  dependencyCount: number;
  /** `spec.enforcement`; Deny when absent (the original's manifests have no such field). */
  enforcement: Enforcement;
  /** Deterministic `field: message` lines; empty for a valid rule. */
  problems: string[];
}

/** The rule's key from `metadata.name` and the `kcp.io/cluster` annotation; undefined if either is missing or invalid. */
export function ruleKeyOf(obj: unknown): RuleKey | undefined {
  if (!isRecord(obj) || !isRecord(obj["metadata"])) return undefined;
  const meta = obj["metadata"];
  const name = meta["name"];
  const annotations = meta["annotations"];
  const cluster = parseLogicalClusterName(isRecord(annotations) ? annotations[CLUSTER_ANNOTATION] : undefined);
  if (typeof name !== "string" || name === "" || cluster === undefined) return undefined;
  return { cluster, name };
}

/** A field path naming the object's own name: with the same type on both sides, every object would block itself. */
function isOwnName(path: FieldPath): boolean {
  const [a, b, ...rest] = path.segments;
  return rest.length === 0 && a?.field === "metadata" && b?.field === "name" && a.selectors.length === 0;
}

/** The schema's pattern error for a well-formed path that is only too deep, said plainly. */
function depthError(e: FieldError, entry: unknown, field: string): FieldError {
  const path = isRecord(entry) && isRecord(entry["apiExportRef"]) ? entry["apiExportRef"]["path"] : undefined;
  if (e.field !== `${field}.apiExportRef.path` || !isWorkspacePath(path)) return e;
  const n = path.split(":").length;
  if (n <= MAX_PROVIDER_PATH_SEGMENTS) return e;
  return {
    field: e.field,
    message: `Invalid value: ${n} segments: may have at most ${MAX_PROVIDER_PATH_SEGMENTS} (root included)`,
  };
}

/** One dependency entry: its problems, or the parsed entry. */
function parseDependency(
  entry: unknown,
  index: number,
  dependent: ParsedDependent | undefined,
): { problems: string[] } | { dependency: ParsedDependency } | { local: ParsedLocalDependency } {
  const field = `spec.dependencies[${index}]`;
  const pathField = `${field}.fieldRef.path`;
  const errors = validate(DEPENDENCY_SCHEMA, entry, field).map((e) => depthError(e, entry, field));
  const raw = isRecord(entry) && isRecord(entry["fieldRef"]) ? entry["fieldRef"]["path"] : undefined;
  const parsed = typeof raw === "string" ? parseFieldPath(raw) : undefined;
  if (parsed && !parsed.ok) {
    // The parser says where a path goes wrong; the schema pattern only says that it does.
    return {
      problems: [...errors.filter((e) => e.field !== pathField).map(formatFieldError), `${pathField}: ${parsed.error}`],
    };
  }
  if (errors.length > 0 || !parsed?.ok) return { problems: errors.map(formatFieldError) };
  const e = entry as {
    apiExportRef?: { path: string; name: string };
    group: string;
    version: string;
    resource: string;
  };
  if (e.apiExportRef === undefined || e.apiExportRef === null) return parseLocal(e, index, parsed.path);
  if (e.group === "")
    return {
      problems: [
        `${field}.group: Invalid value: "": the core group is only for a type of the consumer workspace itself, ` +
          "written without apiExportRef",
      ],
    };
  // The schema checked the path's format already; the constructor checks it again for the type.
  const path = parseWorkspacePath(e.apiExportRef.path);
  if (path === undefined) return { problems: [`${field}.apiExportRef.path: Invalid value: not a workspace path`] };
  const target = { group: e.group, version: e.version, resource: e.resource };
  if (dependent && dependent.group === target.group && dependent.resource === target.resource && isOwnName(parsed.path))
    return {
      problems: [
        `${pathField}: Invalid value: ${JSON.stringify(raw)}: names the dependent itself, so every ` +
          `${target.resource} object would block its own deletion`,
      ],
    };
  return {
    dependency: {
      index,
      path,
      exportName: e.apiExportRef.name,
      target,
      fieldPath: parsed.path,
    },
  };
}

function parseDependent(spec: Record<string, unknown>): { problems: string[]; dependent?: ParsedDependent } {
  const errors = validate({ required: ["dependent"], properties: { dependent: DEPENDENT_SCHEMA } }, spec, "spec");
  if (errors.length > 0) return { problems: errors.map(formatFieldError) };
  const d = spec["dependent"] as Record<string, string>;
  return {
    problems: [],
    dependent: {
      apiExportName: d["apiExportName"] ?? "",
      group: d["group"] ?? "",
      version: d["version"] ?? "",
      kind: d["kind"] ?? "",
      resource: d["resource"] ?? "",
    },
  };
}

export function parseRule(obj: unknown): ParsedRule | undefined {
  const key = ruleKeyOf(obj);
  if (!key || !isRecord(obj)) return undefined;
  const meta = obj["metadata"] as Record<string, unknown>;
  const generation = typeof meta["generation"] === "number" ? meta["generation"] : undefined;
  const rule: ParsedRule = {
    key,
    ...(generation !== undefined ? { generation } : {}),
    dependencies: [],
    localDependencies: [],
    dependencyCount: 0,
    enforcement: "Deny",
    problems: [],
  };
  const spec = obj["spec"];
  if (!isRecord(spec)) {
    rule.problems.push("spec: Required value");
    return rule;
  }
  const enforcement = spec["enforcement"];
  if (enforcement !== undefined && enforcement !== null) {
    // An unknown value enforces as Deny: a typo must never switch protection off.
    if (ENFORCEMENTS.includes(enforcement as Enforcement)) rule.enforcement = enforcement as Enforcement;
    else
      rule.problems.push(
        `spec.enforcement: Unsupported value: ${JSON.stringify(enforcement)}: supported values: "Deny", "Warn"`,
      );
  }
  const { problems, dependent } = parseDependent(spec);
  rule.problems.push(...problems);
  if (dependent) rule.dependent = dependent;

  const list = spec["dependencies"];
  if (!Array.isArray(list)) {
    rule.problems.push("spec.dependencies: Required value");
    return rule;
  }
  rule.dependencyCount = list.length;
  if (list.length === 0) rule.problems.push("spec.dependencies: Invalid value: 0: should have at least 1 items");
  if (list.length > MAX_DEPENDENCIES) {
    // Over the cap nothing is used: which entries to keep would be a guess.
    rule.problems.push(`spec.dependencies: Too many: ${list.length}: must have at most ${MAX_DEPENDENCIES} items`);
    return rule;
  }
  list.forEach((entry: unknown, index) => {
    const result = parseDependency(entry, index, dependent);
    if ("problems" in result) rule.problems.push(...result.problems);
    else if ("local" in result) rule.localDependencies.push(result.local);
    else rule.dependencies.push(result.dependency);
  });
  // Without a usable dependent no dependents can be found, so nothing of this rule may be installed.
  if (!rule.dependent) {
    rule.dependencies = [];
    rule.localDependencies = [];
  }
  return rule;
}

/** The provider workspace paths a set of rules refers to (valid dependencies only), sorted. */
export function referencedPaths(rules: readonly ParsedRule[]): WorkspacePath[] {
  return [...new Set(rules.flatMap((r) => r.dependencies.map((d) => d.path)))].sort();
}
