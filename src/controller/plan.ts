// The pure middle of a reconcile pass: from what was observed, the writes to make (configurations to create,
// update or prune) and, once they are made, the statuses that changed. No I/O, no clock: the time comes in as `now`.
import type { LocalCoverage } from "./local-targets.ts";
import { dependentTypeKey, type IndexReport, type WebhookSettings } from "../api/index-report.ts";
import type { ReferencesVerdict } from "../api/references.ts";
import { rememberedStatus, verdictFor, verdictOf, type RuleVerdict, type Verdicts } from "../api/verdicts.ts";
import type { ParsedRule } from "../api/rule.ts";
import { AuthorCaps, createdOf } from "../api/rule-cap.ts";
import { ruleKeyString, type LogicalClusterName } from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { compareStrings } from "../util/json.ts";
import { findCycles } from "./cycles.ts";
import { keptWorkspaces, planActions, type Action, type ExistingConfiguration } from "./actions.ts";
import { desiredConfigurations, type ValidatingWebhookConfiguration } from "./desired.ts";
import { computeStatus, statusChanged, type InstallResult, type RuleFacts, type RuleStatus } from "./status.ts";

export interface RuleObject {
  metadata: { name: string; uid?: string; resourceVersion?: string; annotations?: Record<string, string> };
  /** Output only: compared with what the pass computes, to write it when different; never an input. */
  status?: unknown;
  [k: string]: unknown;
}

/** A rule as listed (with the virtual workspace endpoint that served it) and as parsed. */
export interface ObservedRule {
  parsed: ParsedRule;
  object: RuleObject;
  endpoint: string;
}

/** Everything one pass acts on, read at its start. */
export interface Observation {
  rules: ObservedRule[];
  existing: ExistingConfiguration[];
  resolutions: ReadonlyMap<string, Resolution>;
  references: ReadonlyMap<string, ReferencesVerdict>;
  caBundle?: string;
  /** The webhook's dependents index report; absent when the webhook publishes none (live mode, not started). */
  indexReport?: IndexReport;
  /** What the controller concluded last (src/api/verdicts.ts): the memory each status is computed from. */
  verdicts: Verdicts;
  /** What the webhook replicas enforce, as they report it; absent when they do not say. */
  webhook?: WebhookSettings;
  /** Rules past their author's cap (--max-rules-per-workspace): installed nowhere; their status says so. */
  overCap?: { cap: number; rules: ReadonlySet<string> };
}

/** The rules past their author's cap: the one queue the webhook's registry keeps too (rule-cap.ts); none, none. */
export function rulesOverCap(rules: readonly ObservedRule[], cap: number | undefined): Observation["overCap"] {
  if (cap === undefined) return undefined;
  const candidates = rules.map((r) => ({ key: r.parsed.key, created: createdOf(r.object) }));
  const caps = AuthorCaps.of(candidates, cap);
  const over = new Set(candidates.map((c) => ruleKeyString(c.key)).filter((k) => !caps.within(k)));
  return over.size > 0 ? { cap, rules: over } : undefined;
}

export interface WritePlan {
  actions: Action[];
  /** The provider workspaces that should hold a configuration after the writes. */
  desired: ReadonlyMap<LogicalClusterName, ValidatingWebhookConfiguration>;
  /** The workspace paths resolved to each provider cluster, for logs. */
  pathsOf: ReadonlyMap<LogicalClusterName, string[]>;
}

export function planWrites(obs: Observation, webhookBaseUrl: string): WritePlan {
  const desired = desiredConfigurations({
    rules: obs.rules.map((r) => r.parsed),
    resolutions: obs.resolutions,
    webhookBaseUrl,
    ...(obs.caBundle ? { caBundle: obs.caBundle } : {}),
    excluded: (rule, dep) =>
      installedNowhere(obs)(rule) ||
      obs.references.get(ruleKeyString(rule.key))?.invalidDependencies.has(dep.index) === true,
  }).configurations;
  const transientPaths = [...obs.resolutions].filter(([, r]) => !r.ok && r.transient === true).map(([p]) => p);
  const actions = planActions(desired, obs.existing, { keep: keptWorkspaces(obs.existing, transientPaths) });
  const pathsOf = new Map<LogicalClusterName, string[]>();
  for (const [p, r] of [...obs.resolutions].sort(([a], [b]) => compareStrings(a, b)))
    if (r.ok) pathsOf.set(r.cluster, [...(pathsOf.get(r.cluster) ?? []), p]);
  return { actions, desired, pathsOf };
}

export interface StatusWrite {
  rule: ObservedRule;
  status: RuleStatus;
}

/** What the webhook's index report says of this rule's dependent type; undefined without a report. */
function indexStateOf(rule: ParsedRule, report: IndexReport | undefined): RuleFacts["index"] {
  if (!report || !rule.dependent) return undefined;
  const key = dependentTypeKey({ ...rule.dependent, exportCluster: rule.key.cluster });
  return report[key] ?? { state: "missing" };
}

/** Ready reasons that only wait for the webhook's first list of the rule's dependent type (index-status.ts). */
const AWAITING_INDEX = new Set(["IndexSyncing", "NotReported"]);

/**
 * The rule statuses that differ from what the rules carry, given how the installs went; the verdicts to keep (every
 * rule's, and the paths' last good resolutions); and how many rules are not Ready only because the webhook has not
 * listed their dependent type yet (the report is read again soon for them). Each status is computed from the stored
 * verdict, never from the status the rule carries: its author may have written that.
 */
/** Rules installed nowhere (past their author's cap, a dependent that is not valid): no local target of theirs either. */
export function installedNowhere(obs: Observation): (rule: ParsedRule) => boolean {
  return (rule) => {
    const key = ruleKeyString(rule.key);
    return obs.overCap?.rules.has(key) === true || obs.references.get(key)?.dependentInvalid === true;
  };
}

export function planStatuses(
  obs: Observation,
  installs: ReadonlyMap<LogicalClusterName, InstallResult>,
  now: string,
  local?: ReadonlyMap<string, LocalCoverage>,
): { writes: StatusWrite[]; awaitingIndex: number; verdicts: Verdicts } {
  const cycles = findCycles(
    obs.rules.flatMap(({ parsed }) =>
      parsed.dependent
        ? [{ key: parsed.key, dependent: parsed.dependent, dependencies: parsed.dependencies.map((d) => d.target) }]
        : [],
    ),
  );
  const writes: StatusWrite[] = [];
  const verdicts = new Map<string, RuleVerdict>();
  let awaitingIndex = 0;
  for (const rule of obs.rules) {
    const { parsed, object } = rule;
    const own = new Map<string, Resolution>();
    for (const dep of parsed.dependencies) {
      const r = obs.resolutions.get(dep.path);
      if (r) own.set(dep.path, r);
    }
    const key = ruleKeyString(parsed.key);
    const cycle = cycles.get(key);
    const references = obs.references.get(key);
    const index = indexStateOf(parsed, obs.indexReport);
    const status = computeStatus(
      parsed,
      {
        resolutions: own,
        installs,
        ...(cycle ? { cycle } : {}),
        ...(references ? { references } : {}),
        ...(index ? { index } : {}),
        ...(obs.webhook?.enforceUnverified ? { enforcesUnverified: true } : {}),
        ...(obs.overCap?.rules.has(key) ? { overCap: obs.overCap.cap } : {}),
        ...(local?.has(key) ? { local: local.get(key)! } : {}),
      },
      rememberedStatus(verdictFor(obs.verdicts, key, object.metadata.uid)),
      now,
    );
    verdicts.set(key, verdictOf(status, object.metadata.uid, references?.invalidDependencies));
    if (statusChanged(object.status, status)) writes.push({ rule, status });
    const ready = status.conditions?.find((c) => c.type === "Ready");
    if (ready && AWAITING_INDEX.has(ready.reason)) awaitingIndex++;
  }
  return { writes, awaitingIndex, verdicts: { rules: verdicts, paths: keptPaths(obs) } };
}

/**
 * The last good logical cluster of every path a rule names: fresh where it resolved, the stored one where it failed
 * transiently, none where it definitely names no workspace (or no rule names it any more).
 */
function keptPaths(obs: Observation): Map<string, LogicalClusterName> {
  const kept = new Map<string, LogicalClusterName>();
  for (const [path, r] of obs.resolutions) {
    const cluster = r.ok ? r.cluster : r.transient === true ? obs.verdicts.paths.get(path) : undefined;
    if (cluster) kept.set(path, cluster);
  }
  return kept;
}
