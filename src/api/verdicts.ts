// What the controller concluded about each rule, kept where only dep-ctrl's own identities write: ConfigMaps in the
// dep-ctrl workspace. A rule's `status` is output only: its author is admin of its own workspace and can write it
// (where the operator has not applied the export's maximal permission policy), so nothing is ever decided from it.
// The webhook decides from these verdicts instead, and the controller computes each next status from them, so a
// verdict (a revocation's start, "this rule protected", "its dependent is invalid") survives restarts of either
// binary without trusting a byte a tenant wrote.
//
// Also kept: the last good logical cluster of every provider path a rule names, so a webhook replica that restarts
// while workspace reads fail keeps protecting what it protected (docs/architecture.md, "Blast radius").
//
// Sized for 10,000 rules: entries are spread by hash over VERDICT_BUCKETS ConfigMaps (about 150 bytes a rule, so
// some 50 KB a bucket, far from a ConfigMap's 1 MiB), a pass rewrites only the buckets that changed, and a steady
// state writes nothing.
import { asRecord, canonicalJson, compareStrings } from "../util/json.ts";
import { parseLogicalClusterName } from "./wire.ts";
import {
  CONDITION_TYPES,
  type Condition,
  type ConditionStatus,
  type ConditionType,
  type DependencyRuleStatus,
  type LogicalClusterName,
} from "./types.ts";

export const VERDICTS_NAMESPACE = "default";
export const VERDICTS_LABEL = "dependencies.opendefense.cloud/rule-verdicts";
export const VERDICTS_KEY = "verdicts.json";
export const VERDICT_BUCKETS = 32;
export const VERDICTS_COLLECTION_PATH = `/api/v1/namespaces/${VERDICTS_NAMESPACE}/configmaps`;

export const verdictsName = (bucket: number): string => `dependency-rule-verdicts-${String(bucket).padStart(2, "0")}`;

/** One condition as the controller last wrote it: enough to keep its transition time and to decide from. */
export interface RememberedCondition {
  status: ConditionStatus;
  reason: string;
  /** lastTransitionTime, stamped by the controller's clock. */
  since: string;
}

/** The controller's last verdict on one rule object (by uid: a rule deleted and created again starts afresh). */
export interface RuleVerdict {
  uid?: string;
  generation?: number;
  conditions: Partial<Record<ConditionType, RememberedCondition>>;
}

export interface Verdicts {
  /** Rule key (`<cluster>/<name>`) → verdict. */
  rules: ReadonlyMap<string, RuleVerdict>;
  /** Provider path → the last logical cluster it resolved to. */
  paths: ReadonlyMap<string, LogicalClusterName>;
}

export const NO_VERDICTS: Verdicts = { rules: new Map(), paths: new Map() };

/** FNV-1a: stable across processes and versions, so every replica puts a key in the same bucket. */
export function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % VERDICT_BUCKETS;
}

/** The verdict the controller keeps for a rule whose computed status is `status`. */
export function verdictOf(status: DependencyRuleStatus, uid: string | undefined): RuleVerdict {
  const conditions: RuleVerdict["conditions"] = {};
  for (const c of status.conditions ?? [])
    conditions[c.type] = { status: c.status, reason: c.reason, since: c.lastTransitionTime };
  return {
    ...(uid !== undefined ? { uid } : {}),
    ...(status.observedGeneration !== undefined ? { generation: status.observedGeneration } : {}),
    conditions,
  };
}

/** The conditions a verdict remembers, in the shape computeStatus takes as the previous status (no messages). */
export function rememberedStatus(v: RuleVerdict | undefined): DependencyRuleStatus | undefined {
  if (!v) return undefined;
  const conditions: Condition[] = [];
  for (const type of CONDITION_TYPES) {
    const c = v.conditions[type];
    if (c) conditions.push({ type, status: c.status, reason: c.reason, message: "", lastTransitionTime: c.since });
  }
  return { ...(v.generation !== undefined ? { observedGeneration: v.generation } : {}), conditions };
}

/** The verdict on the rule object with `uid`; a verdict on an earlier object of the same name does not count. */
export function verdictFor(verdicts: Verdicts, key: string, uid: string | undefined): RuleVerdict | undefined {
  const v = verdicts.rules.get(key);
  return v && (v.uid === undefined || v.uid === uid) ? v : undefined;
}

// ---- What the webhook decides from a verdict (the reasons are the controller's, src/controller/status.ts). ----

export const DEPENDENT_INVALID_REASON = "DependentInvalid";
export const CHECKS_DECLINED_REASON = "ChecksDeclined";

/**
 * What the rule's DependentsIndexed verdict means when the webhook's own index cannot answer:
 * `protected` (the index, or live lists, worked for this rule, possibly on another replica: fail closed where its
 * dependents may be), `not-enforced` (it never worked, or the author's revocation outlived its grace: decide as if
 * the rule were absent), `unknown` (no verdict yet: only this replica's own index can tell).
 */
export type IndexTrust = "protected" | "not-enforced" | "unknown";

/** DependentsIndexed reasons (src/controller/index-status.ts) by what they mean for enforcement. */
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

/** The reason of a verdict's condition; with `generation`, only when the verdict is about that generation. */
function reasonOf(v: RuleVerdict | undefined, type: ConditionType, generation?: number): string | undefined {
  if (!v || (generation !== undefined && v.generation !== generation)) return undefined;
  return v.conditions[type]?.reason;
}

/** The controller found this generation's dependent type not served by the rule's own workspace: not enforced. */
export function dependentRejected(v: RuleVerdict | undefined, generation: number | undefined): boolean {
  return generation !== undefined && reasonOf(v, "ReferencesValid", generation) === DEPENDENT_INVALID_REASON;
}

/** The controller could not check this generation because its author declined the read-only claims. */
export function checksDeclined(v: RuleVerdict | undefined, generation: number | undefined): boolean {
  return generation !== undefined && reasonOf(v, "ReferencesValid", generation) === CHECKS_DECLINED_REASON;
}

export function indexTrust(v: RuleVerdict | undefined): IndexTrust {
  const reason = reasonOf(v, "DependentsIndexed");
  if (reason === undefined) return "unknown";
  if (INDEX_PROTECTED_REASONS.includes(reason)) return "protected";
  return INDEX_NOT_ENFORCED_REASONS.includes(reason) ? "not-enforced" : "unknown";
}

// ---- The ConfigMaps. ----

interface Bucket {
  rules: Record<string, unknown>;
  paths: Record<string, string>;
}

const STATUSES: readonly string[] = ["True", "False", "Unknown"];
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

function parseVerdict(raw: unknown): RuleVerdict | undefined {
  const r = asRecord(raw);
  const c = asRecord(r?.["c"]);
  if (!r || !c) return undefined;
  const conditions: RuleVerdict["conditions"] = {};
  for (const type of CONDITION_TYPES) {
    const entry = c[type];
    if (!Array.isArray(entry)) continue;
    const [status, reason, since] = entry as unknown[];
    if (typeof status !== "string" || !STATUSES.includes(status)) continue;
    if (typeof reason !== "string" || typeof since !== "string" || !TIME.test(since)) continue;
    conditions[type] = { status: status as ConditionStatus, reason, since };
  }
  const g = r["g"];
  const u = r["u"];
  return {
    ...(typeof u === "string" ? { uid: u } : {}),
    ...(Number.isSafeInteger(g) ? { generation: g as number } : {}),
    conditions,
  };
}

/** Every verdict in the ConfigMaps as listed; what does not parse is left out (and decided as no verdict). */
export function parseVerdicts(configMaps: Iterable<unknown>): Verdicts {
  const rules = new Map<string, RuleVerdict>();
  const paths = new Map<string, LogicalClusterName>();
  for (const cm of configMaps) {
    const raw = asRecord(asRecord(cm)?.["data"])?.[VERDICTS_KEY];
    if (typeof raw !== "string") continue;
    let bucket: Record<string, unknown> | undefined;
    try {
      bucket = asRecord(JSON.parse(raw));
    } catch {
      continue;
    }
    for (const [key, value] of Object.entries(asRecord(bucket?.["rules"]) ?? {})) {
      const v = parseVerdict(value);
      if (v) rules.set(key, v);
    }
    for (const [path, value] of Object.entries(asRecord(bucket?.["paths"]) ?? {})) {
      const cluster = parseLogicalClusterName(value);
      if (cluster) paths.set(path, cluster);
    }
  }
  return { rules, paths };
}

function serialize(v: RuleVerdict): unknown {
  const c: Record<string, [string, string, string]> = {};
  for (const type of CONDITION_TYPES) {
    const x = v.conditions[type];
    if (x) c[type] = [x.status, x.reason, x.since];
  }
  return {
    ...(v.uid !== undefined ? { u: v.uid } : {}),
    ...(v.generation !== undefined ? { g: v.generation } : {}),
    c,
  };
}

/** The data of every bucket (all VERDICT_BUCKETS of them, empty ones included), each as its canonical string. */
export function verdictBuckets(verdicts: Verdicts): string[] {
  const buckets: Bucket[] = Array.from({ length: VERDICT_BUCKETS }, () => ({ rules: {}, paths: {} }));
  for (const key of [...verdicts.rules.keys()].sort(compareStrings))
    buckets[bucketOf(key)]!.rules[key] = serialize(verdicts.rules.get(key)!);
  for (const path of [...verdicts.paths.keys()].sort(compareStrings))
    buckets[bucketOf(path)]!.paths[path] = verdicts.paths.get(path)!;
  return buckets.map((b) => canonicalJson(b));
}

/** The ConfigMap of one bucket holding `data` (a string from verdictBuckets). */
export function verdictConfigMap(bucket: number, data: string, resourceVersion?: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: verdictsName(bucket),
      namespace: VERDICTS_NAMESPACE,
      labels: { [VERDICTS_LABEL]: "true" },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    data: { [VERDICTS_KEY]: data },
  };
}

/** The bucket a verdict ConfigMap of ours holds, from its name; undefined for any other ConfigMap. */
export function bucketOfConfigMap(configMap: unknown): number | undefined {
  const name = asRecord(asRecord(configMap)?.["metadata"])?.["name"];
  const m = typeof name === "string" ? /^dependency-rule-verdicts-(\d\d)$/.exec(name) : null;
  const n = m ? Number(m[1]) : NaN;
  return Number.isInteger(n) && n < VERDICT_BUCKETS ? n : undefined;
}
