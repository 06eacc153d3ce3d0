// I1, protection: no dependency is deleted while a dependent referenced it for the whole window before the delete
// under a Ready rule (a local target's only where the consumer accepted its claim). Real deletes are ordered by the shard's resourceVersions; allowed dry-run deletes by our own log.
import { namesAt } from "../fieldpath.ts";
import { keyOf, type OpRecord, type WatchRecord } from "../history.ts";
import type { Judging } from "./findings.ts";
import { iso, skipAnnotated, versionsOver, type RuleEdge, type Versions } from "./timeline.ts";

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

function firstRefSince(versions: Versions, refs: (v: WatchRecord) => boolean): number {
  let since = versions.at(-1)?.recvAt ?? 0;
  for (let i = versions.length - 1; i >= 0; i--) {
    const v = versions[i] as WatchRecord;
    if (!refs(v)) break;
    since = v.recvAt;
  }
  return since;
}

const dependencyResources = (j: Judging): Set<string> =>
  new Set(j.tl.edgesEver(0, Number.MAX_SAFE_INTEGER).map((e) => e.dependency));

/** I1 on the deletes kcp reported (DELETED watch events of a dependency type). */
export function checkDeletes(j: Judging): void {
  const opsByCluster = new Map<string, OpRecord[]>();
  for (const op of j.h.ops) {
    let l = opsByCluster.get(op.cluster);
    if (!l) opsByCluster.set(op.cluster, (l = []));
    l.push(op);
  }
  const dependencies = dependencyResources(j);
  for (const rec of j.h.watches) {
    if (rec.type !== "DELETED" || !dependencies.has(rec.resource)) continue;
    const candidates = (opsByCluster.get(rec.cluster) ?? []).filter((op) => op.sentAt <= rec.recvAt && causes(op, rec));
    const cause = candidates.reduce<OpRecord | undefined>((a, b) => (a && a.sentAt >= b.sentAt ? a : b), undefined);
    if (cause?.kind === "delete-workspace") {
      j.out.deletedWithWorkspace++;
      continue;
    }
    j.out.checkedDeletes++;
    checkDelete(j, rec, cause);
  }
}

function checkDelete(j: Judging, rec: WatchRecord, cause: OpRecord | undefined): void {
  const W = j.h.windowMs;
  const sentAt = cause?.sentAt ?? rec.recvAt;
  const versions = j.tl.objects.get(keyOf(rec)) ?? [];
  if (versions.some((v) => v.recvAt >= sentAt - W && v.rv <= rec.rv && skipAnnotated(v))) return;
  const edges = j.tl
    .edgesInForce(sentAt - W, rec.recvAt)
    .filter((e) => e.dependency === rec.resource && j.tl.protectsIn(e, rec.cluster));
  for (const { key, versions: dv } of j.tl.dependentsOf(rec.cluster, edges)) {
    for (const edge of edges.filter((e) => key.split("|")[1] === e.dependent)) {
      const d = dv[0];
      if (!d || (rec.namespace !== "" && d.namespace !== rec.namespace)) continue;
      const before = dv.filter((v) => v.rv < rec.rv);
      const atDelete = before.at(-1);
      const refs = (v: WatchRecord): boolean => v.type !== "DELETED" && namesAt(v.object, edge.path).includes(rec.name);
      if (!atDelete || !refs(atDelete)) continue;
      const since = versionsOver(before, sentAt - W, Number.MAX_SAFE_INTEGER);
      const held = since.length > 0 && (since[0] as WatchRecord).recvAt <= sentAt - W && since.every(refs);
      const what =
        `${rec.resource} ${j.ws(rec.cluster)}/${rec.namespace}/${rec.name} deleted (rv ${rec.rv}, ` +
        `${cause ? `${cause.kind} #${cause.id} sent ${iso(cause.sentAt)}` : "no request of ours"}) ` +
        `while ${edge.dependentKind} ${d.namespace}/${d.name} referenced it at ${edge.path} (rule ${edge.rule}, ` +
        `reference seen since ${iso(firstRefSince(before, refs))})`;
      if (held) j.out.violations.push({ invariant: "I1", message: what, at: rec.recvAt });
      else j.out.races.push({ invariant: "I1", message: `inside the window: ${what}` });
    }
  }
}

/** I1 on dry-run deletes that were allowed: times from our own log, the dependent's from the watch. */
export function checkDryRunDeletes(j: Judging): void {
  const dependencies = dependencyResources(j);
  for (const op of j.h.ops) {
    if ((op.kind !== "delete-dry-run" && op.kind !== "probe") || op.status < 200 || op.status >= 300) continue;
    if (!dependencies.has(op.resource)) continue;
    j.out.checkedDeletes++;
    const from = op.sentAt - j.h.windowMs;
    const to = op.answeredAt + j.h.windowMs;
    const target = j.tl.objects.get(keyOf(op)) ?? [];
    if (versionsOver(target, from, to).some(skipAnnotated)) continue;
    const edges = j.tl
      .edgesInForce(from, to)
      .filter((e) => e.dependency === op.resource && j.tl.protectsIn(e, op.cluster));
    for (const { key, versions: dv } of j.tl.dependentsOf(op.cluster, edges)) {
      for (const edge of edges.filter((e) => key.split("|")[1] === e.dependent)) {
        checkDryRunAgainst(j, op, edge, dv, from, to);
      }
    }
  }
}

function checkDryRunAgainst(j: Judging, op: OpRecord, edge: RuleEdge, dv: Versions, from: number, to: number): void {
  const d = dv[0];
  if (!d || (op.namespace !== "" && d.namespace !== op.namespace)) return;
  const over = versionsOver(dv, from, to);
  const refs = (v: WatchRecord): boolean => v.type !== "DELETED" && namesAt(v.object, edge.path).includes(op.name);
  if (over.length > 0 && (over[0] as WatchRecord).recvAt <= from && over.every(refs)) {
    j.out.violations.push({
      invariant: "I1",
      message:
        `dry-run delete #${op.id} of ${op.resource} ${j.ws(op.cluster)}/${op.namespace}/${op.name} allowed ` +
        `(sent ${iso(op.sentAt)}) while ${edge.dependentKind} ${d.namespace}/${d.name} referenced it at ` +
        `${edge.path} (rule ${edge.rule})`,
      at: op.sentAt,
    });
  }
}
