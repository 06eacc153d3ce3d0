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
import { canNameObject, DEFAULT_INDEX_BUDGET, INDEX_COST, type IndexBudget, type UnreadableReason } from "./budget.ts";
import type { IndexLedger, LedgerAccount } from "./ceiling.ts";
import { readableCost, Rec, refList, type Ref } from "./record.ts";
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

/** The result of a lookup; `unreadable` when a dependent that might name the target could not be read. */
export interface StoreAnswer {
  dependents: Dependent[];
  complete: boolean;
  unreadable?: UnreadableReason;
}

export class ReferenceStore implements EndpointStore<unknown, IndexedDependent>, LedgerAccount {
  /** The field paths tracked, in a fixed order; a record's `names` follow it. */
  readonly paths: readonly FieldPath[];
  private readonly records = new Map<string, Rec>();
  private readonly workspaces = new Map<string, WorkspaceIndex>();
  private readonly readCap: number;
  private readonly budget: IndexBudget;
  /** The replica's ceiling (ceiling.ts), charged with every readable dependent; none: no ceiling. */
  private readonly ledger: IndexLedger | undefined;
  readonly author: string; // whose share of the ceiling this store charges (ceiling.ts, LedgerAccount)
  /** Unreadable objects by reason, for the metric. */
  readonly unreadable: Record<UnreadableReason, number> = { names: 0, budget: 0, share: 0 };
  private charged = 0;

  constructor(
    paths: readonly FieldPath[],
    readCap: number = MAX_VISITED_VALUES,
    budget?: Partial<IndexBudget>,
    charge?: { ledger: IndexLedger; author: string },
  ) {
    this.paths = paths;
    this.readCap = readCap;
    this.budget = { ...DEFAULT_INDEX_BUDGET, ...budget };
    this.ledger = charge?.ledger;
    this.author = charge?.author ?? "";
  }

  /** Heap bytes (INDEX_COST) held readable (charged to the ledger) and unreadable (not: ceiling.ts says why). */
  heldBytes(): { readable: number; unreadable: number } {
    let unreadable = 0;
    for (const r of this.records.values()) if (r.why) unreadable += r.bytes;
    return { readable: this.charged, unreadable };
  }

  /** This store is no longer read (replaced by a relist, or its endpoint or type is gone): give back its charge. */
  retire(): void {
    this.ledger?.retire(this);
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
    const out = { names: 0, budget: 0, share: 0 };
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
    const refs = this.read(obj);
    const perPath = refs === null ? [] : this.paths.length === 1 ? [refs as Ref] : (refs as readonly Ref[]);
    const bytes = refs === null ? 0 : readableCost(ws, key, name, perPath);
    const why = refs === null ? "names" : this.refusal(ws, bytes);
    if (why) this.keepUnreadable(ws, ns, name, key, why);
    else this.keep(new Rec(ws, ns, name, refs, undefined, bytes), key);
  }

  /** Why a readable dependent of `bytes` is not kept readable: its workspace's budget or share; none: it fits. */
  private refusal(ws: WorkspaceIndex, bytes: number): UnreadableReason | undefined {
    if (ws.objects >= this.budget.maxObjectsPerWorkspace || ws.bytes + bytes > this.budget.maxBytesPerWorkspace)
      return "budget";
    if (ws.demoted || (this.ledger && !this.ledger.admit(this, ws.cluster, bytes))) return "share";
    return undefined;
  }

  private keep(rec: Rec, key: string): void {
    this.records.set(key, rec);
    rec.ws.objects++;
    rec.ws.bytes += rec.bytes;
    this.charged += rec.bytes;
    for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) rec.ws.add(n, key);
  }

  private keepUnreadable(ws: WorkspaceIndex, ns: string, name: string, key: string, why: UnreadableReason): void {
    const rec = new Rec(ws, ns, name, null, why, INDEX_COST.unreadable + key.length + name.length);
    this.records.set(key, rec);
    ws.objects++;
    ws.bytes += rec.bytes;
    ws.addUnreadable(ns, key, why);
    this.unreadable[why]++;
  }

  /**
   * Makes every readable dependent of `workspace` unreadable, and keeps its new ones so until the workspace has none
   * left here or the store is relisted: the ledger took its charge to make room for a holder within its share.
   */
  demote(workspace: string): void {
    const ws = this.workspaces.get(workspace);
    if (!ws || ws.demoted) return;
    ws.demoted = true;
    for (const key of ws.readableKeys()) {
      const rec = this.records.get(key)!;
      this.unkeep(rec, key);
      this.keepUnreadable(ws, rec.ns, rec.name, key, "share");
    }
  }

  /** Takes a readable record out of its maps and counts, without releasing a charge. */
  private unkeep(rec: Rec, key: string): void {
    this.records.delete(key);
    rec.ws.objects--;
    rec.ws.bytes -= rec.bytes;
    this.charged -= rec.bytes;
    for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) rec.ws.remove(n, key);
  }

  delete(key: string): void {
    const rec = this.records.get(key);
    if (!rec) return;
    const ws = rec.ws;
    if (rec.why) {
      this.records.delete(key);
      ws.objects--;
      ws.bytes -= rec.bytes;
      ws.removeUnreadable(rec.ns, key, rec.why);
      this.unreadable[rec.why]--;
    } else {
      this.unkeep(rec, key);
      this.ledger?.release(this, ws.cluster, rec.bytes);
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
  private read(obj: unknown): Ref | readonly Ref[] | null {
    const perPath: Ref[] = [];
    const distinct = new Set<string>();
    for (const p of this.paths) {
      const e = evaluate(obj, p, this.readCap);
      if (!e.complete) return null;
      const names = e.names.filter(canNameObject);
      for (const n of names) distinct.add(n);
      if (distinct.size > this.budget.maxNamesPerObject) return null;
      perPath.push(names.length === 0 ? "" : names.length === 1 ? names[0]! : names);
    }
    return perPath.length === 1 ? perPath[0]! : perPath;
  }
}

function keysOf(keys: Keys | undefined): Iterable<string> {
  if (keys === undefined) return [];
  return typeof keys === "string" ? [keys] : keys;
}
