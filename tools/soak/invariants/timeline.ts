// What the checker reads a history as: every object's versions in the order its shard wrote them, and each rule's
// versions over time as edges (dependent → dependency at a field path), with when the rule was Ready.
import { keyOf, type History, type LocalTargetConsent, type WatchRecord } from "../history.ts";

export const SKIP_ANNOTATION = "dependencies.opendefense.cloud/skip-protection";
export const RULE_RESOURCE = "dependencyrules.dependencies.opendefense.cloud";

export interface RuleEdge {
  rule: string;
  dependent: string; // "virtualmachines.compute.test.io"
  dependentKind: string;
  dependency: string; // "vpcs.network.test.io", or "secrets" for a core type
  path: string;
  /**
   * A local target's (`group: ""`, a type of the consumer workspace itself): the dependent's export, as
   * `<rule's logical cluster>/<spec.dependent.apiExportName>`. It protects only where the consumer accepted that
   * export's claim (History.localTargets).
   */
  localExport?: string;
}

export interface RuleVersion {
  recvAt: number;
  deleted: boolean;
  ready: boolean;
  edges: RuleEdge[];
}

export type Versions = WatchRecord[];

const spec = (o: Record<string, unknown>): Record<string, unknown> =>
  (o["spec"] as Record<string, unknown> | undefined) ?? {};
const meta = (o: Record<string, unknown>): Record<string, unknown> =>
  (o["metadata"] as Record<string, unknown> | undefined) ?? {};

function ruleVersion(rec: WatchRecord, workspaces: Record<string, string>): RuleVersion {
  const o = rec.object;
  const s = spec(o);
  const dependent = (s["dependent"] as Record<string, string> | undefined) ?? {};
  const deps = (s["dependencies"] as Record<string, unknown>[] | undefined) ?? [];
  const generation = meta(o)["generation"];
  const conditions =
    ((o["status"] as Record<string, unknown> | undefined)?.["conditions"] as Record<string, unknown>[] | undefined) ??
    [];
  const readyCond = conditions.find((c) => c["type"] === "Ready");
  const ready =
    readyCond?.["status"] === "True" &&
    (readyCond["observedGeneration"] === undefined || readyCond["observedGeneration"] === generation);
  const ruleName = `${workspaces[rec.cluster] ?? rec.cluster}/${rec.name}`;
  // A Warn rule lets referenced deletes through with a warning: it holds nobody to I1.
  const enforcing = s["enforcement"] === undefined || s["enforcement"] === "Deny";
  const edges = (enforcing ? deps : []).map((d): RuleEdge => {
    const local = d["group"] === "";
    return {
      rule: ruleName,
      dependent: `${dependent["resource"] ?? ""}.${dependent["group"] ?? ""}`,
      dependentKind: dependent["kind"] ?? "",
      dependency: local ? String(d["resource"]) : `${String(d["resource"])}.${String(d["group"])}`,
      path: String((d["fieldRef"] as Record<string, string> | undefined)?.["path"] ?? ""),
      ...(local ? { localExport: `${rec.cluster}/${dependent["apiExportName"] ?? ""}` } : {}),
    };
  });
  return { recvAt: rec.recvAt, deleted: rec.type === "DELETED", ready, edges };
}

/** Sorted history per object, and the rules' versions over time. */
export class Timeline {
  readonly objects = new Map<string, Versions>();
  readonly rules = new Map<string, RuleVersion[]>();
  readonly byCluster = new Map<string, Set<string>>();
  private readonly consent: Map<string, LocalTargetConsent>;
  /** `<cluster>|<resource>` of the local targets a consumer declined (declinedLocal), built on first use. */
  private declined: Set<string> | undefined;

  constructor(h: History) {
    this.consent = new Map((h.localTargets ?? []).map((c) => [c.export, c]));
    for (const rec of h.watches) {
      const k = keyOf(rec);
      let v = this.objects.get(k);
      if (!v) {
        v = [];
        this.objects.set(k, v);
        let c = this.byCluster.get(rec.cluster);
        if (!c) this.byCluster.set(rec.cluster, (c = new Set()));
        c.add(k);
      }
      v.push(rec);
    }
    for (const v of this.objects.values()) v.sort((a, b) => a.rv - b.rv || a.recvAt - b.recvAt);
    for (const [k, v] of this.objects) {
      if (!k.includes(`|${RULE_RESOURCE}|`)) continue;
      this.rules.set(
        k,
        v.map((r) => ruleVersion(r, h.workspaces)),
      );
    }
  }

  /** Rule edges in force (Ready, unchanged) during the whole interval [from, to]. */
  edgesInForce(from: number, to: number): RuleEdge[] {
    const out: RuleEdge[] = [];
    for (const versions of this.rules.values()) {
      const relevant = versionsOver(versions, from, to);
      if (relevant.length === 0) continue;
      const first = relevant[0];
      if (!first || first.recvAt > from) continue; // the rule did not exist yet at `from`
      if (relevant.some((v) => v.deleted || !v.ready)) continue;
      for (const e of first.edges) {
        if (relevant.every((v) => v.edges.some((x) => x.dependency === e.dependency && x.path === e.path))) out.push(e);
      }
    }
    return out;
  }

  /** Every edge any rule had at some time in [from, to] (for I2, which only needs "a rule said so"). */
  edgesEver(from: number, to: number): RuleEdge[] {
    const out: RuleEdge[] = [];
    for (const versions of this.rules.values()) {
      for (const v of versionsOver(versions, from, to)) if (!v.deleted) out.push(...v.edges);
    }
    return out;
  }

  /** Whether `edge` protects in `cluster`: every edge does but a local target's, only where its claim was accepted. */
  protectsIn(edge: RuleEdge, cluster: string): boolean {
    return edge.localExport === undefined || (this.consent.get(edge.localExport)?.accepted.includes(cluster) ?? false);
  }

  /** Whether `cluster` declined the claim of an export whose rules ever named `resource` as a local target. */
  declinedLocal(cluster: string, resource: string): boolean {
    if (!this.declined) {
      this.declined = new Set();
      for (const e of this.edgesEver(0, Number.MAX_SAFE_INTEGER)) {
        for (const c of (e.localExport && this.consent.get(e.localExport)?.declined) || [])
          this.declined.add(`${c}|${e.dependency}`);
      }
    }
    return this.declined.has(`${cluster}|${resource}`);
  }

  /** The objects in `cluster` of a dependent type of one of `edges`. */
  dependentsOf(cluster: string, edges: RuleEdge[]): { key: string; versions: Versions }[] {
    const resources = new Set(edges.map((e) => e.dependent));
    const out: { key: string; versions: Versions }[] = [];
    for (const key of this.byCluster.get(cluster) ?? []) {
      if (resources.has(key.split("|")[1] ?? "")) out.push({ key, versions: this.objects.get(key) ?? [] });
    }
    return out;
  }
}

/** The version in effect at `from` (if any) and every later one up to `to`. */
export function versionsOver<T extends { recvAt: number }>(versions: readonly T[], from: number, to: number): T[] {
  let start = -1;
  for (let i = 0; i < versions.length; i++) if ((versions[i] as T).recvAt <= from) start = i;
  return versions.filter((v, i) => i === start || (v.recvAt > from && v.recvAt <= to));
}

export function skipAnnotated(rec: WatchRecord): boolean {
  const ann = meta(rec.object)["annotations"] as Record<string, string> | undefined;
  return ann?.[SKIP_ANNOTATION] === "true";
}

export const iso = (t: number): string => (Number.isFinite(t) ? new Date(t).toISOString().slice(11, 23) : String(t));
