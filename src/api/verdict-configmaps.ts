// The rule verdicts (verdicts.ts) as kept in the dep-ctrl workspace: ConfigMaps labelled VERDICTS_LABEL, one per
// hash bucket. Sized for 10,000 rules: entries are spread over VERDICT_BUCKETS ConfigMaps (about 150 bytes a rule, so
// some 50 KB a bucket, far from a ConfigMap's 1 MiB), a pass rewrites only the buckets that changed, and a steady
// state writes nothing. What does not parse is left out, and decided as no verdict.
import { asRecord, canonicalJson, compareStrings } from "../util/json.ts";
import { parseLogicalClusterName } from "./wire.ts";
import { CONDITION_TYPES, type ConditionStatus, type LogicalClusterName } from "./types.ts";
import type { RuleVerdict, Verdicts } from "./verdicts.ts";

export const VERDICTS_NAMESPACE = "default";
export const VERDICTS_LABEL = "dependencies.opendefense.cloud/rule-verdicts";
export const VERDICTS_KEY = "verdicts.json";
export const VERDICT_BUCKETS = 32;
export const VERDICTS_COLLECTION_PATH = `/api/v1/namespaces/${VERDICTS_NAMESPACE}/configmaps`;

export const verdictsName = (bucket: number): string => `dependency-rule-verdicts-${String(bucket).padStart(2, "0")}`;

/** FNV-1a: stable across processes and versions, so every replica puts a key in the same bucket. */
export function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % VERDICT_BUCKETS;
}

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
  const x = Array.isArray(r["x"]) ? (r["x"] as unknown[]).filter((i): i is number => Number.isSafeInteger(i)) : [];
  return {
    ...(typeof u === "string" ? { uid: u } : {}),
    ...(Number.isSafeInteger(g) ? { generation: g as number } : {}),
    conditions,
    ...(x.length > 0 ? { excluded: x } : {}),
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
    ...(v.excluded?.length ? { x: v.excluded } : {}),
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
