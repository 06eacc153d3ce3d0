// A rule's references checked against what kcp serves: the dependent must be a type that the APIExport named in
// `spec.dependent.apiExportName` exports from the rule's own workspace, at that version and with that kind; each
// dependency must be exported by `apiExportRef.name` at `apiExportRef.path`, at its version. Pure: the caller fetches
// the APIExports and APIResourceSchemas (src/kcp/exports.ts) and passes what it found.
//
// Outcomes, because they call for different actions: ok; definitely wrong (kcp answered, and the answer is "not
// there"), so the part is not enforced; declined (the rule's own workspace refused the read-only claims), so the rule
// was never checked and is not enforced; or unknown (kcp unreachable, a provider that declined), so protection stays
// installed and the rule says what is missing.
import type { ParsedDependent, GroupVersionResource, ParsedDependency } from "./rule.ts";

/** One `spec.resources[]` entry of an APIExport (apis.kcp.io/v1alpha2). */
export interface ExportedResource {
  group: string;
  /** Plural resource name. */
  name: string;
  /** APIResourceSchema name in the export's workspace. */
  schema: string;
}

/** What the checks need of an APIResourceSchema. */
export interface SchemaSummary {
  kind: string;
  versions: { name: string; served: boolean }[];
}

/**
 * The annotation a dependency provider puts on its own APIExport to say which workspaces' rules may gate deletes of
 * what it exports: comma-separated workspace paths. Absent: every workspace (the Go original's manifests carry none);
 * empty: no other workspace. The provider's own rules are always admitted.
 */
export const RULE_AUTHORS_ANNOTATION = "dependencies.opendefense.cloud/rule-authors";

/** The workspace paths an APIExport's annotation admits; undefined when it admits everyone (no annotation). */
export function parseRuleAuthors(annotations: Readonly<Record<string, unknown>> | undefined): string[] | undefined {
  const raw = annotations?.[RULE_AUTHORS_ANNOTATION];
  if (typeof raw !== "string") return undefined;
  return raw
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/** What kcp has for one APIExport name in one workspace. */
export type ExportFacts =
  | {
      found: true;
      resources: readonly ExportedResource[];
      /** Schemas of that workspace by name; a missing name could not be read. */
      schemas: ReadonlyMap<string, SchemaSummary>;
      /** The workspaces whose rules the provider admits (RULE_AUTHORS_ANNOTATION); undefined: every workspace. */
      ruleAuthors?: readonly string[];
    }
  | { found: false; definite: true }
  | {
      found: false;
      definite: false;
      reason: string;
      /** kcp answered 403: the workspace's owner declined the read-only claims (not a moment, a choice). */
      declined?: true;
    };

export type ReferenceCheck =
  | { ok: true }
  | {
      ok: false;
      definite: boolean;
      message: string;
      /** The APIExport itself is not there: a provider may still apply it, unlike a typo in a field. */
      exportMissing?: true;
      /** The workspace's owner declined the read-only claims, so this could not be checked. */
      declined?: true;
    };

const OK: ReferenceCheck = { ok: true };

interface Where {
  /** The spec field the message starts with, e.g. `spec.dependent` or `spec.dependencies[1]`. */
  field: string;
  exportName: string;
  /** How to name the export's workspace to the rule's author: `this rule's workspace`, `root:network`. */
  workspace: string;
}

const grString = (t: { group: string; resource: string }): string =>
  t.group === "" ? t.resource : `${t.resource}.${t.group}`;

/** Whether `facts` serve `want` (group, resource, version and, when given, kind). */
export function checkServed(
  facts: ExportFacts,
  want: GroupVersionResource & { kind?: string },
  where: Where,
): ReferenceCheck {
  const exp = `APIExport ${where.exportName} in ${where.workspace}`;
  if (!facts.found) {
    return facts.definite
      ? { ok: false, definite: true, exportMissing: true, message: `${where.field}: ${exp} not found` }
      : {
          ok: false,
          definite: false,
          message: `${where.field}: cannot check ${exp}: ${facts.reason}`,
          ...(facts.declined ? { declined: true as const } : {}),
        };
  }
  const entry = facts.resources.find((r) => r.group === want.group && r.name === want.resource);
  if (!entry) {
    const has = facts.resources.map((r) => grString({ group: r.group, resource: r.name })).sort();
    return {
      ok: false,
      definite: true,
      message: `${where.field}: ${exp} does not export ${grString(want)} (it exports ${has.length ? has.join(", ") : "nothing"})`,
    };
  }
  const schema = facts.schemas.get(entry.schema);
  if (!schema)
    return {
      ok: false,
      definite: false,
      message: `${where.field}: cannot check ${exp}: its APIResourceSchema ${entry.schema} could not be read`,
    };
  const served = schema.versions.filter((v) => v.served).map((v) => v.name);
  if (!served.includes(want.version))
    return {
      ok: false,
      definite: true,
      message:
        `${where.field}.version: ${exp} serves ${want.resource} at ${served.join(", ") || "no version"}, ` +
        `not ${want.version}`,
    };
  if (want.kind !== undefined && schema.kind !== want.kind)
    return {
      ok: false,
      definite: true,
      message: `${where.field}.kind: ${exp} serves ${want.resource} as kind ${schema.kind}, not ${want.kind}`,
    };
  return OK;
}

export const OWN_WORKSPACE = "this rule's workspace";

export function checkDependent(dependent: ParsedDependent, facts: ExportFacts): ReferenceCheck {
  return checkServed(facts, dependent, {
    field: "spec.dependent",
    exportName: dependent.apiExportName,
    workspace: OWN_WORKSPACE,
  });
}

export function checkDependency(dep: ParsedDependency, facts: ExportFacts): ReferenceCheck {
  return checkServed(facts, dep.target, {
    field: `spec.dependencies[${dep.index}]`,
    exportName: dep.exportName,
    workspace: dep.path,
  });
}

/**
 * Whether the dependency's provider admits rules of the author's workspace to gate its deletes. `admitted` is what
 * the caller found by resolving the annotation's paths: true, false, or undefined when some path could not be
 * resolved right now and none matched (then nothing changes: protection stays, as for any check that cannot be made).
 */
export function checkAdmitted(dep: ParsedDependency, admitted: boolean | undefined): ReferenceCheck {
  if (admitted === true) return OK;
  const what = `spec.dependencies[${dep.index}]: the provider of APIExport ${dep.exportName} at ${dep.path}`;
  if (admitted === undefined)
    return {
      ok: false,
      definite: false,
      message: `${what} limits which workspaces' rules may gate its deletes (${RULE_AUTHORS_ANNOTATION}), and not every workspace it names could be resolved now`,
    };
  return {
    ok: false,
    definite: true,
    message:
      `${what} does not admit rules of this workspace to gate its deletes (annotation ${RULE_AUTHORS_ANNOTATION} ` +
      "on its APIExport): this dependency is not enforced; ask the provider to add this workspace's path",
  };
}

/**
 * The one thing a rule's author is told about a dependency in a workspace other than the rule's own that does not
 * check out, whatever the reason: the workspace missing or being deleted, dep-ctrl not allowed to read it or its
 * export, the export missing or serving something else, kcp too slow to say. Any tenant may write rules, so answers
 * that differed would tell it which workspace paths exist and what their exports serve. It names only what the author
 * wrote. (The rule admission webhook says it; the rule's status should say the same.)
 */
export function unconfirmed(dep: ParsedDependency): string {
  const t = dep.target;
  return (
    `spec.dependencies[${dep.index}]: ${unresolvedWorkspace(dep.path)}, or its APIExport ` +
    `${dep.exportName} does not serve ${grString(t)} at ${t.version} (which one is said only about the rule's own ` +
    "workspace); the controller checks the rule again"
  );
}

/**
 * What a rule's author is told about a workspace path that did not resolve, whatever kcp answered: not found (404),
 * not readable by dep-ctrl (403), being deleted, no logical cluster yet, an error. Words that differed would tell any
 * tenant which workspace paths exist. The real reason is in the log only (the controller's, the webhook's).
 */
export function unresolvedWorkspace(path: string): string {
  return `workspace ${path} not found or not readable by dep-ctrl`;
}

/** The verdict over a whole rule, for its `ReferencesValid` condition and for what gets installed. */
export interface ReferencesVerdict {
  /** The dependent is definitely not served: nothing of the rule is enforced. */
  dependentInvalid: boolean;
  /** Indexes of dependencies that definitely do not check out: not installed. */
  invalidDependencies: ReadonlySet<number>;
  /** Messages of every failed check, definite ones first, in spec order. */
  problems: string[];
  /** True when some check could not be made (the rest may still be definite). */
  unknown: boolean;
  /** What `problems` does not tell the author about other workspaces (unconfirmed()), for the log only. */
  hidden?: string[];
  /**
   * The rule's own workspace declined the read-only claims, so the dependent was never checked: the rule is not
   * enforced (unless the operator opts such rules in), since a rule nobody could check must not gate anyone.
   */
  declined?: boolean;
}

export function combineChecks(
  dependent: ReferenceCheck,
  dependencies: readonly { index: number; check: ReferenceCheck }[],
): ReferencesVerdict {
  const definite: string[] = [];
  const unknown: string[] = [];
  const note = (c: ReferenceCheck) => {
    if (!c.ok) (c.definite ? definite : unknown).push(c.message);
  };
  note(dependent);
  const invalid = new Set<number>();
  for (const { index, check } of dependencies) {
    note(check);
    if (!check.ok && check.definite) invalid.add(index);
  }
  return {
    dependentInvalid: !dependent.ok && dependent.definite,
    invalidDependencies: invalid,
    problems: [...definite, ...unknown],
    unknown: unknown.length > 0,
    declined: !dependent.ok && dependent.declined === true,
  };
}
