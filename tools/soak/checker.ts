// The invariant checker: reads a History (kcp's own watch events and the workload's request log) and reports
// violations of I1–I4 and the races inside the consistency window. Pure, and independent of the product: it imports
// nothing from src/, parses rules and field paths itself, and orders events on a shard by kcp's resourceVersions.
import { namesAt } from "./fieldpath.ts";
import { keyOf, type History, type OpRecord, type WatchRecord } from "./history.ts";

export const SKIP_ANNOTATION = "dependencies.opendefense.cloud/skip-protection";
export const RULE_RESOURCE = "dependencyrules.dependencies.opendefense.cloud";
export const WORKSPACE_RESOURCE = "workspaces.tenancy.kcp.io";

export type Invariant = "I1" | "I2" | "I3" | "I4";

export interface Violation {
  invariant: Invariant;
  message: string;
  at: number;
}

export interface Race {
  invariant: Invariant;
  message: string;
}

export interface CheckResult {
  violations: Violation[];
  races: Race[];
  /** Dependencies deleted by a workspace deletion (not judged by I1). */
  deletedWithWorkspace: number;
  checkedDeletes: number;
  checkedDenials: number;
  /** Protected deletes answered while the webhook was down (what I4 judged). */
  checkedWhileDown: number;
  /** Per rule, the share of the run it was Ready (I1 only holds a Ready rule to its word). */
  readyShare: Record<string, number>;
}

interface RuleEdge {
  rule: string;
  dependent: string; // "virtualmachines.compute.test.io"
  dependentKind: string;
  dependency: string; // "vpcs.network.test.io"
  path: string;
}

interface RuleVersion {
  recvAt: number;
  deleted: boolean;
  ready: boolean;
  edges: RuleEdge[];
}

type Versions = WatchRecord[];

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
  const edges = (enforcing ? deps : []).map((d) => ({
    rule: ruleName,
    dependent: `${dependent["resource"] ?? ""}.${dependent["group"] ?? ""}`,
    dependentKind: dependent["kind"] ?? "",
    dependency: `${String(d["resource"])}.${String(d["group"])}`,
    path: String((d["fieldRef"] as Record<string, string> | undefined)?.["path"] ?? ""),
  }));
  return { recvAt: rec.recvAt, deleted: rec.type === "DELETED", ready, edges };
}

/** Sorted history per object, and the rules' versions over time. */
class Index {
  readonly objects = new Map<string, Versions>();
  readonly rules = new Map<string, RuleVersion[]>();
  readonly byCluster = new Map<string, Set<string>>();

  constructor(h: History) {
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
}

/** The version in effect at `from` (if any) and every later one up to `to`. */
function versionsOver<T extends { recvAt: number }>(versions: readonly T[], from: number, to: number): T[] {
  let start = -1;
  for (let i = 0; i < versions.length; i++) if ((versions[i] as T).recvAt <= from) start = i;
  return versions.filter((v, i) => i === start || (v.recvAt > from && v.recvAt <= to));
}

function skipAnnotated(rec: WatchRecord): boolean {
  const ann = meta(rec.object)["annotations"] as Record<string, string> | undefined;
  return ann?.[SKIP_ANNOTATION] === "true";
}

const DELETE_CAUSES = new Set(["delete", "delete-collection", "delete-namespace", "delete-workspace"]);

function causes(op: OpRecord, rec: WatchRecord): boolean {
  if (!DELETE_CAUSES.has(op.kind) || op.cluster !== rec.cluster) return false;
  if (op.status < 200 || op.status >= 300) {
    // A DELETECOLLECTION can delete some items and then be refused on another one; a namespace/workspace delete
    // is answered before its contents go.
    if (op.kind !== "delete-collection") return false;
  }
  switch (op.kind) {
    case "delete":
      return op.resource === rec.resource && op.namespace === rec.namespace && op.name === rec.name;
    case "delete-collection":
      return op.resource === rec.resource && op.namespace === rec.namespace;
    case "delete-namespace":
      return rec.namespace !== "" && op.name === rec.namespace;
    default:
      return true; // the whole workspace
  }
}

export function check(h: History): CheckResult {
  const idx = new Index(h);
  const W = h.windowMs;
  const out: CheckResult = {
    violations: [],
    races: [],
    deletedWithWorkspace: 0,
    checkedDeletes: 0,
    checkedDenials: 0,
    checkedWhileDown: 0,
    readyShare: readyShare(h, idx),
  };
  const ws = (c: string): string => h.workspaces[c] ?? c;
  const opsByCluster = new Map<string, OpRecord[]>();
  for (const op of h.ops) {
    let l = opsByCluster.get(op.cluster);
    if (!l) opsByCluster.set(op.cluster, (l = []));
    l.push(op);
  }
  const allEdges = idx.edgesEver(0, Number.MAX_SAFE_INTEGER);
  const dependencyResources = new Set(allEdges.map((e) => e.dependency));

  // I1 on real deletes: ordered by the shard's resourceVersions.
  for (const rec of h.watches) {
    if (rec.type !== "DELETED" || !dependencyResources.has(rec.resource)) continue;
    const candidates = (opsByCluster.get(rec.cluster) ?? []).filter((op) => op.sentAt <= rec.recvAt && causes(op, rec));
    const cause = candidates.reduce<OpRecord | undefined>((a, b) => (a && a.sentAt >= b.sentAt ? a : b), undefined);
    if (cause?.kind === "delete-workspace") {
      out.deletedWithWorkspace++;
      continue;
    }
    out.checkedDeletes++;
    const sentAt = cause?.sentAt ?? rec.recvAt;
    const versions = idx.objects.get(keyOf(rec)) ?? [];
    if (versions.some((v) => v.recvAt >= sentAt - W && v.rv <= rec.rv && skipAnnotated(v))) continue;
    const edges = idx.edgesInForce(sentAt - W, rec.recvAt).filter((e) => e.dependency === rec.resource);
    for (const { key, versions: dv } of dependentsOf(idx, rec.cluster, edges)) {
      for (const edge of edges.filter((e) => key.split("|")[1] === e.dependent)) {
        const d = dv[0];
        if (!d || (rec.namespace !== "" && d.namespace !== rec.namespace)) continue;
        const before = dv.filter((v) => v.rv < rec.rv);
        const atDelete = before.at(-1);
        const refs = (v: WatchRecord): boolean =>
          v.type !== "DELETED" && namesAt(v.object, edge.path).includes(rec.name);
        if (!atDelete || !refs(atDelete)) continue;
        const since = versionsOver(before, sentAt - W, Number.MAX_SAFE_INTEGER);
        const held = since.length > 0 && (since[0] as WatchRecord).recvAt <= sentAt - W && since.every(refs);
        const what =
          `${rec.resource} ${ws(rec.cluster)}/${rec.namespace}/${rec.name} deleted (rv ${rec.rv}, ` +
          `${cause ? `${cause.kind} #${cause.id} sent ${iso(cause.sentAt)}` : "no request of ours"}) ` +
          `while ${edge.dependentKind} ${d.namespace}/${d.name} referenced it at ${edge.path} (rule ${edge.rule}, ` +
          `reference seen since ${iso(firstRefSince(before, refs))})`;
        if (held) out.violations.push({ invariant: "I1", message: what, at: rec.recvAt });
        else out.races.push({ invariant: "I1", message: `inside the window: ${what}` });
      }
    }
  }

  // I1 on dry-run deletes that were allowed: times from our own log, the dependent's from the watch.
  for (const op of h.ops) {
    if ((op.kind !== "delete-dry-run" && op.kind !== "probe") || op.status < 200 || op.status >= 300) continue;
    if (!dependencyResources.has(op.resource)) continue;
    out.checkedDeletes++;
    const from = op.sentAt - W;
    const to = op.answeredAt + W;
    const target = idx.objects.get(keyOf(op)) ?? [];
    if (versionsOver(target, from, to).some(skipAnnotated)) continue;
    const edges = idx.edgesInForce(from, to).filter((e) => e.dependency === op.resource);
    for (const { key, versions: dv } of dependentsOf(idx, op.cluster, edges)) {
      for (const edge of edges.filter((e) => key.split("|")[1] === e.dependent)) {
        const d = dv[0];
        if (!d || (op.namespace !== "" && d.namespace !== op.namespace)) continue;
        const over = versionsOver(dv, from, to);
        const refs = (v: WatchRecord): boolean =>
          v.type !== "DELETED" && namesAt(v.object, edge.path).includes(op.name);
        if (over.length > 0 && (over[0] as WatchRecord).recvAt <= from && over.every(refs)) {
          out.violations.push({
            invariant: "I1",
            message:
              `dry-run delete #${op.id} of ${op.resource} ${ws(op.cluster)}/${op.namespace}/${op.name} allowed ` +
              `(sent ${iso(op.sentAt)}) while ${edge.dependentKind} ${d.namespace}/${d.name} referenced it at ` +
              `${edge.path} (rule ${edge.rule})`,
            at: op.sentAt,
          });
        }
      }
    }
  }

  // I2: each blocker a denial names existed and referenced the target around the decision.
  const kindToResource = new Map(allEdges.map((e) => [e.dependentKind, e.dependent]));
  for (const op of h.ops) {
    if (op.status !== 409 || !/still referenced by/.test(op.message)) continue;
    out.checkedDenials++;
    const m = /cannot delete ([^/\s]+)\/(\S+): still referenced by (.*)$/.exec(op.message);
    if (!m) {
      out.violations.push({ invariant: "I2", message: `unparsable denial #${op.id}: ${op.message}`, at: op.sentAt });
      continue;
    }
    const [, , targetName = "", list = ""] = m;
    const from = op.sentAt - W;
    const to = op.answeredAt + W;
    const edges = idx.edgesEver(from, to).filter((e) => e.dependency === op.resource);
    for (const blocker of list.replace(/ and (at least )?\d+ more$/, "").split(", ")) {
      const parts = blocker.split("/");
      const kind = parts[0] ?? "";
      const name = parts.at(-1) ?? "";
      const ns = parts.length === 3 ? (parts[1] ?? "") : op.namespace;
      const resource = kindToResource.get(kind);
      const dv = resource ? (idx.objects.get(keyOf({ cluster: op.cluster, resource, namespace: ns, name })) ?? []) : [];
      const ok = versionsOver(dv, from, to).some(
        (v) =>
          v.type !== "DELETED" &&
          edges.some((e) => e.dependent === resource && namesAt(v.object, e.path).includes(targetName)),
      );
      if (!ok) {
        out.violations.push({
          invariant: "I2",
          message:
            `denial #${op.id} (${op.kind} ${op.resource} ${ws(op.cluster)}/${op.namespace}/${targetName}, sent ` +
            `${iso(op.sentAt)}) names ${blocker}, which did not exist or reference it then`,
          at: op.sentAt,
        });
      }
    }
  }

  checkConvergence(h, idx, out);
  checkFailClosed(h, idx, out);
  return out;
}

function dependentsOf(idx: Index, cluster: string, edges: RuleEdge[]): { key: string; versions: Versions }[] {
  const resources = new Set(edges.map((e) => e.dependent));
  const out: { key: string; versions: Versions }[] = [];
  for (const key of idx.byCluster.get(cluster) ?? []) {
    if (resources.has(key.split("|")[1] ?? "")) out.push({ key, versions: idx.objects.get(key) ?? [] });
  }
  return out;
}

function firstRefSince(versions: Versions, refs: (v: WatchRecord) => boolean): number {
  let since = versions.at(-1)?.recvAt ?? 0;
  for (let i = versions.length - 1; i >= 0; i--) {
    const v = versions[i] as WatchRecord;
    if (!refs(v)) break;
    since = v.recvAt;
  }
  return since;
}

/**
 * How long kcp itself may wait before it looks at a deleting workspace again: while the workspace's LogicalCluster is
 * still deleting its content, kcp v0.30.0 requeues the Workspace after a fifth of the LogicalCluster's age, at most
 * 10 minutes (pkg/reconciler/tenancy/workspace/workspace_reconcile_phase.go), so a 15-minute-old workspace whose
 * content is gone in a second still shows for 3 more minutes. The LogicalCluster is created with the Workspace, so
 * the Workspace's own creationTimestamp stands for it. No product code is on that path.
 */
export function workspaceRecheckMs(
  versions: readonly { object: Record<string, unknown> }[],
  deletedAt: number,
): number {
  const meta = versions[0]?.object["metadata"] as { creationTimestamp?: unknown } | undefined;
  const created = typeof meta?.creationTimestamp === "string" ? Date.parse(meta.creationTimestamp) : Number.NaN;
  if (!Number.isFinite(created) || created > deletedAt) return 0;
  return Math.min(10 * 60_000, (deletedAt - created) / 5);
}

/** I3: namespace and workspace deletions complete, protection returns after each fault, nothing dies unasked. */
function checkConvergence(h: History, idx: Index, out: CheckResult): void {
  const B = h.boundMs;
  const ws = (c: string): string => h.workspaces[c] ?? c;
  for (const op of h.ops) {
    if ((op.kind !== "delete-namespace" && op.kind !== "delete-workspace") || op.status < 200 || op.status >= 300)
      continue;
    const key =
      op.kind === "delete-namespace"
        ? keyOf({ cluster: op.cluster, resource: "namespaces", namespace: "", name: op.name })
        : keyOf({ cluster: "root", resource: WORKSPACE_RESOURCE, namespace: "", name: op.name });
    const versions = idx.objects.get(key) ?? [];
    const gone = versions.find((v) => v.type === "DELETED" && v.recvAt >= op.sentAt);
    const doneAt = gone?.recvAt ?? Number.POSITIVE_INFINITY;
    const bound = op.kind === "delete-workspace" ? B + workspaceRecheckMs(versions, op.sentAt) : B;
    if (doneAt - op.sentAt > bound && op.sentAt + bound <= h.endedAt) {
      out.violations.push({
        invariant: "I3",
        message:
          `${op.kind === "delete-namespace" ? `namespace ${ws(op.cluster)}/${op.name}` : `workspace ${op.workspace}`} ` +
          `deleted at ${iso(op.sentAt)} ${gone ? `took ${Math.round(doneAt - op.sentAt)} ms` : "never went away"} ` +
          `(bound ${bound} ms)`,
        at: op.sentAt,
      });
    }
  }
  const probes = h.ops.filter((o) => o.kind === "probe");
  for (const f of h.faults) {
    const back = probes.find((p) => p.sentAt >= f.endAt && p.status === 409);
    const late = back ? back.answeredAt - f.endAt > B : f.endAt + B <= h.endedAt;
    if (late) {
      out.violations.push({
        invariant: "I3",
        message: `protection did not return within ${B} ms after ${f.kind} (${f.target}) ended at ${iso(f.endAt)}`,
        at: f.endAt,
      });
    }
  }
  for (const e of h.exits) {
    if (!e.expected) {
      out.violations.push({
        invariant: "I3",
        message: `${e.process} exited with code ${e.code} at ${iso(e.at)} without being killed`,
        at: e.at,
      });
    }
  }
}

/** I4: while no webhook replica can answer, no delete of a protected resource succeeds. */
function checkFailClosed(h: History, idx: Index, out: CheckResult): void {
  const ws = (c: string): string => h.workspaces[c] ?? c;
  for (const f of h.faults) {
    if (!f.webhookDown) continue;
    const protectedResources = new Set(idx.edgesInForce(f.startAt, f.endAt).map((e) => e.dependency));
    for (const op of h.ops) {
      // A DELETECOLLECTION of an empty collection succeeds without any admission call: not judged here.
      if (op.kind !== "delete" && op.kind !== "delete-dry-run" && op.kind !== "probe") continue;
      if (op.sentAt < f.startAt || op.answeredAt > f.endAt || !protectedResources.has(op.resource)) continue;
      if (op.status !== 404) out.checkedWhileDown++;
      if (op.status >= 200 && op.status < 300) {
        out.violations.push({
          invariant: "I4",
          message:
            `${op.kind} #${op.id} of ${op.resource} ${ws(op.cluster)}/${op.namespace}/${op.name} succeeded at ` +
            `${iso(op.answeredAt)} while the webhook was down (${f.kind}, ${iso(f.startAt)}–${iso(f.endAt)})`,
          at: op.sentAt,
        });
      }
    }
  }
}

function readyShare(h: History, idx: Index): Record<string, number> {
  const out: Record<string, number> = {};
  const end = h.endedAt || (h.watches.at(-1)?.recvAt ?? h.startedAt);
  for (const [key, versions] of idx.rules) {
    let ready = 0;
    versions.forEach((v, i) => {
      const from = Math.max(v.recvAt, h.startedAt);
      const to = Math.min(versions[i + 1]?.recvAt ?? end, end);
      if (v.ready && !v.deleted && to > from) ready += to - from;
    });
    const [cluster = "", , , name = ""] = key.split("|");
    out[`${h.workspaces[cluster] ?? cluster}/${name}`] = end > h.startedAt ? ready / (end - h.startedAt) : 0;
  }
  return out;
}

const iso = (t: number): string => (Number.isFinite(t) ? new Date(t).toISOString().slice(11, 23) : String(t));
