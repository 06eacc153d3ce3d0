// The dependents index of one dependent type on one endpoint (shard): for every object, only the names it references
// at the rules' field paths, plus a reverse map per consumer logical cluster: referenced name → object keys.
// A DELETE is answered from the reverse map in time proportional to the dependents of that name in that workspace,
// never to the type's size. It is the informer's store (src/kcp/informer.ts), so it changes in the same step as the
// watch that feeds it: there is no second copy of the objects to drift from.
//
// Kept small on purpose (bench/README.md, index memory): a record is one small object, the workspace and namespace
// strings are shared by all records that have them, a name is held once per record (the reverse map's key is the
// record's own string), and a name referenced by one object costs one map entry, not a map and a set.
import { evaluate, MAX_VISITED_VALUES, type FieldPath } from "../../../fieldpath/fieldpath.ts";
import { CLUSTER_ANNOTATION } from "../../../api/types.ts";
import type { EndpointStore } from "../../../kcp/informer.ts";
import { asRecord, nonEmptyString } from "../../../util/json.ts";
import type { Dependent, Lookup } from "../../admission.ts";
import { canNameObject, DEFAULT_INDEX_BUDGET, type IndexBudget, type UnreadableReason } from "./budget.ts";
import { WorkspaceIndex, type Keys } from "./workspace.ts";

/** What the index keeps of one dependent object; `names[i]` is what it names at path i, null when unreadable. */
export interface IndexedDependent {
  cluster: string;
  /** "" for a cluster-scoped dependent. */
  namespace: string;
  name: string;
  names: (readonly string[] | null)[];
}

/** A lookup asked for a field path this index does not track (yet): the caller must not read "no dependents". */
export class NotIndexedError extends Error {
  override name = "NotIndexedError";
}

/** The names at one path: none (""), one name, or several. */
type Ref = string | readonly string[];

/** One dependent. `refs` is the Ref of the only path, or one per path; null when unreadable (see `why`). */
class Rec {
  readonly ws: WorkspaceIndex;
  readonly ns: string;
  readonly name: string;
  readonly refs: Ref | readonly Ref[] | null;
  readonly why: UnreadableReason | undefined;
  readonly bytes: number;
  constructor(
    ws: WorkspaceIndex,
    ns: string,
    name: string,
    refs: Ref | readonly Ref[] | null,
    why: UnreadableReason | undefined,
    bytes: number,
  ) {
    this.ws = ws;
    this.ns = ns;
    this.name = name;
    this.refs = refs;
    this.why = why;
    this.bytes = bytes;
  }
}

/** The result of a lookup; `unreadable` when a dependent that might name the target could not be read. */
export interface StoreAnswer {
  dependents: Dependent[];
  complete: boolean;
  unreadable?: UnreadableReason;
}

const refList = (r: Ref): readonly string[] => (typeof r === "string" ? (r === "" ? [] : [r]) : r);

export class ReferenceStore implements EndpointStore<unknown, IndexedDependent> {
  /** The field paths tracked, in a fixed order; a record's `names` follow it. */
  readonly paths: readonly FieldPath[];
  private readonly records = new Map<string, Rec>();
  private readonly workspaces = new Map<string, WorkspaceIndex>();
  private readonly readCap: number;
  private readonly budget: IndexBudget;
  /** Unreadable objects by reason, for the metric. */
  readonly unreadable: Record<UnreadableReason, number> = { names: 0, budget: 0 };

  constructor(paths: readonly FieldPath[], readCap: number = MAX_VISITED_VALUES, budget?: Partial<IndexBudget>) {
    this.paths = paths;
    this.readCap = readCap;
    this.budget = { ...DEFAULT_INDEX_BUDGET, ...budget };
  }

  get size(): number {
    return this.records.size;
  }

  /** Whether this endpoint holds any object of `cluster` (then that workspace is on this endpoint's shard). */
  hasCluster(cluster: string): boolean {
    return this.workspaces.has(cluster);
  }

  /** Consumer workspaces with at least one unreadable object, by reason. */
  workspacesUnreadable(): Record<UnreadableReason, number> {
    const out = { names: 0, budget: 0 };
    for (const ws of this.workspaces.values()) for (const r of ws.unreadableReasons()) out[r]++;
    return out;
  }

  *values(): Iterable<IndexedDependent> {
    for (const r of this.records.values()) {
      const names = this.paths.map((_, i) => (r.refs === null ? null : this.namesAt(r, i)));
      yield { cluster: r.ws.cluster, namespace: r.ns, name: r.name, names };
    }
  }

  set(key: string, obj: unknown): void {
    this.delete(key);
    const meta = asRecord(asRecord(obj)?.["metadata"]);
    const name = nonEmptyString(meta?.["name"]);
    const cluster = nonEmptyString(asRecord(meta?.["annotations"])?.[CLUSTER_ANNOTATION]);
    if (name === undefined || cluster === undefined) return; // nothing could ever look it up
    let ws = this.workspaces.get(cluster);
    if (!ws) this.workspaces.set(cluster, (ws = new WorkspaceIndex(cluster)));
    const ns = ws.namespace(nonEmptyString(meta?.["namespace"]) ?? "");
    const read = this.read(obj);
    const bytes = key.length + (read.refs === null ? 0 : read.bytes);
    let why: UnreadableReason | undefined = read.refs === null ? "names" : undefined;
    if (
      !why &&
      (ws.objects >= this.budget.maxObjectsPerWorkspace || ws.bytes + bytes > this.budget.maxBytesPerWorkspace)
    )
      why = "budget";
    const rec = new Rec(ws, ns, name, why ? null : read.refs, why, why ? key.length : bytes);
    this.records.set(key, rec);
    ws.objects++;
    ws.bytes += rec.bytes;
    if (why) {
      ws.addUnreadable(ns, key, why);
      this.unreadable[why]++;
      return;
    }
    for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) ws.add(n, key);
  }

  delete(key: string): void {
    const rec = this.records.get(key);
    if (!rec) return;
    this.records.delete(key);
    const ws = rec.ws;
    ws.objects--;
    ws.bytes -= rec.bytes;
    if (rec.why) {
      ws.removeUnreadable(rec.ns, key, rec.why);
      this.unreadable[rec.why]--;
    } else {
      for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) ws.remove(n, key);
    }
    if (ws.objects === 0) this.workspaces.delete(ws.cluster);
  }

  /**
   * The dependents of `lookup` (at most `limit + 1`, so the caller can tell "more"), with the first of its paths at
   * which each names the target. A namespaced target sees its own namespace and cluster-scoped dependents; a
   * cluster-scoped target sees all. An unreadable object counts as naming every name (fail closed) and sets
   * `unreadable`. Throws NotIndexedError for a path this store does not track.
   */
  find(lookup: Lookup, limit: number): StoreAnswer {
    const wanted = lookup.fieldPaths.map((p) => {
      const i = this.paths.findIndex((q) => q.source === p.source);
      if (i < 0) throw new NotIndexedError(`field path ${p.source} is not indexed yet`);
      return i;
    });
    const out: Dependent[] = [];
    let unreadable: UnreadableReason | undefined;
    const answer = (complete: boolean): StoreAnswer => ({
      dependents: out,
      complete,
      ...(unreadable ? { unreadable } : {}),
    });
    const ws = this.workspaces.get(lookup.consumer);
    if (!ws) return answer(true);
    const seen = new Set<string>();
    const inScope = (r: Rec): boolean => lookup.namespace === undefined || r.ns === lookup.namespace || r.ns === "";
    const consider = (key: string): boolean => {
      const r = this.records.get(key);
      if (!r || seen.has(key) || !inScope(r)) return true;
      seen.add(key);
      if (lookup.self && lookup.self.name === r.name && (lookup.self.namespace ?? "") === r.ns) return true;
      const at = r.why ? wanted[0] : wanted.find((i) => this.namesAt(r, i).includes(lookup.name));
      if (at === undefined) return true;
      unreadable ??= r.why;
      const field = this.paths[at]!.source;
      out.push(r.ns ? { namespace: r.ns, name: r.name, field } : { name: r.name, field });
      return out.length <= limit;
    };
    for (const key of keysOf(ws.keysNaming(lookup.name))) if (!consider(key)) return answer(false);
    for (const key of ws.unreadableIn(lookup.namespace)) if (!consider(key)) return answer(false);
    return answer(true);
  }

  private namesAt(r: Rec, i: number): readonly string[] {
    if (r.refs === null) return [];
    return this.paths.length === 1 ? refList(r.refs as Ref) : refList((r.refs as readonly Ref[])[i]!);
  }

  /** The names of `obj` at every path, or null when it cannot be read whole or names too many. */
  private read(obj: unknown): { refs: Ref | readonly Ref[] | null; bytes: number } {
    const perPath: Ref[] = [];
    const distinct = new Set<string>();
    let bytes = 0;
    for (const p of this.paths) {
      const e = evaluate(obj, p, this.readCap);
      if (!e.complete) return { refs: null, bytes: 0 };
      const names = e.names.filter(canNameObject);
      for (const n of names) {
        if (!distinct.has(n)) bytes += n.length;
        distinct.add(n);
      }
      if (distinct.size > this.budget.maxNamesPerObject) return { refs: null, bytes: 0 };
      perPath.push(names.length === 0 ? "" : names.length === 1 ? names[0]! : names);
    }
    return { refs: perPath.length === 1 ? perPath[0]! : perPath, bytes };
  }
}

function keysOf(keys: Keys | undefined): Iterable<string> {
  if (keys === undefined) return [];
  return typeof keys === "string" ? [keys] : keys;
}
