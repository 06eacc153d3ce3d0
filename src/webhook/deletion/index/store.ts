// The dependents index of one dependent type on one endpoint (shard): for every object, only the names it references
// at the rules' field paths, plus a reverse map per consumer logical cluster: referenced name → the dependents naming it.
// A DELETE is answered from the reverse map in time proportional to the dependents of that name in that workspace,
// never to the type's size. It is the informer's store (src/kcp/informer.ts), so it changes in the same step as the
// watch that feeds it: there is no second copy of the objects to drift from.
//
// Kept small on purpose (bench/README.md, "What the index holds"): a record is one small object held by its
// workspace by namespace and name, so no key string is kept per dependent (a key is taken apart, objectKeyParts, to
// find its record); the namespace strings are shared by all records that have them; the reverse map holds records,
// and a name referenced by one object costs one map entry, not a map and a set.
import { evaluate, MAX_VISITED_VALUES, type FieldPath } from "../../../fieldpath/fieldpath.ts";
import { CLUSTER_ANNOTATION } from "../../../api/types.ts";
import { objectKeyParts, type EndpointStore } from "../../../kcp/informer.ts";
import { asRecord, nonEmptyString } from "../../../util/json.ts";
import type { Dependent, Lookup } from "../../admission.ts";
import { canNameObject, DEFAULT_INDEX_BUDGET, type IndexBudget, type UnreadableReason } from "./budget.ts";
import type { IndexLedger, LedgerAccount } from "./ceiling.ts";
import { readableCost, Rec, refList, unreadableCost, type Ref } from "./record.ts";
import { WorkspaceIndex } from "./workspace.ts";

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

/**
 * Keys are the informer's (objectKey): `delete` finds a record by the key's parts, the same ones `set` reads from the
 * object it is given.
 */
export class ReferenceStore implements EndpointStore<unknown, IndexedDependent>, LedgerAccount {
  /** The field paths tracked, in a fixed order; a record's `names` follow it. */
  readonly paths: readonly FieldPath[];
  private count = 0;
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
    for (const ws of this.workspaces.values()) for (const r of ws.records()) if (r.why) unreadable += r.bytes;
    return { readable: this.charged, unreadable };
  }

  /** This store is no longer read (replaced by a relist, or its endpoint or type is gone): give back its charge. */
  retire(): void {
    this.ledger?.retire(this);
  }

  get size(): number {
    return this.count;
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
    for (const ws of this.workspaces.values())
      for (const r of ws.records()) {
        const names = this.paths.map((_, i) => (r.refs === null ? null : this.namesAt(r, i)));
        yield { cluster: ws.cluster, namespace: r.ns, name: r.name, names };
      }
  }

  set(_key: string, obj: unknown): void {
    const meta = asRecord(asRecord(obj)?.["metadata"]);
    const name = nonEmptyString(meta?.["name"]);
    const cluster = nonEmptyString(asRecord(meta?.["annotations"])?.[CLUSTER_ANNOTATION]);
    if (name === undefined || cluster === undefined) return; // nothing could ever look it up
    this.remove(cluster, nonEmptyString(meta?.["namespace"]) ?? "", name);
    let ws = this.workspaces.get(cluster);
    if (!ws) this.workspaces.set(cluster, (ws = new WorkspaceIndex(cluster)));
    const ns = ws.namespace(nonEmptyString(meta?.["namespace"]) ?? "");
    const refs = this.read(obj);
    const perPath = refs === null ? [] : this.paths.length === 1 ? [refs as Ref] : (refs as readonly Ref[]);
    const bytes = refs === null ? 0 : readableCost(ws, name, perPath);
    const why = refs === null ? "names" : this.refusal(ws, bytes);
    if (why) this.keepUnreadable(ws, ns, name, why);
    else this.keep(ws, new Rec(ns, name, refs, undefined, bytes));
  }

  /** Why a readable dependent of `bytes` is not kept readable: its workspace's budget or share; none: it fits. */
  private refusal(ws: WorkspaceIndex, bytes: number): UnreadableReason | undefined {
    if (ws.objects >= this.budget.maxObjectsPerWorkspace || ws.bytes + bytes > this.budget.maxBytesPerWorkspace)
      return "budget";
    if (ws.demoted || (this.ledger && !this.ledger.admit(this, ws.cluster, bytes))) return "share";
    return undefined;
  }

  private keep(ws: WorkspaceIndex, rec: Rec): void {
    ws.put(rec);
    this.count++;
    this.charged += rec.bytes;
    for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) ws.add(n, rec);
  }

  private keepUnreadable(ws: WorkspaceIndex, ns: string, name: string, why: UnreadableReason): void {
    ws.put(new Rec(ns, name, null, why, unreadableCost(name)));
    this.count++;
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
    for (const rec of ws.readable()) {
      this.unkeep(ws, rec);
      this.keepUnreadable(ws, rec.ns, rec.name, "share");
    }
  }

  /** Takes a readable record out of its maps and counts, without releasing a charge. */
  private unkeep(ws: WorkspaceIndex, rec: Rec): void {
    ws.take(rec);
    this.count--;
    this.charged -= rec.bytes;
    for (let i = 0; i < this.paths.length; i++) for (const n of this.namesAt(rec, i)) ws.remove(n, rec);
  }

  delete(key: string): void {
    const at = objectKeyParts(key);
    if (at) this.remove(at.cluster, at.namespace, at.name);
  }

  private remove(cluster: string, ns: string, name: string): void {
    const ws = this.workspaces.get(cluster);
    const rec = ws?.record(ns, name);
    if (!ws || !rec) return;
    if (rec.why) {
      ws.take(rec);
      this.count--;
      this.unreadable[rec.why]--;
    } else {
      this.unkeep(ws, rec);
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
    const seen = new Set<Rec>();
    const inScope = (r: Rec): boolean => lookup.namespace === undefined || r.ns === lookup.namespace || r.ns === "";
    const consider = (r: Rec): boolean => {
      if (seen.has(r) || !inScope(r)) return true;
      seen.add(r);
      if (lookup.self && lookup.self.name === r.name && (lookup.self.namespace ?? "") === r.ns) return true;
      const at = r.why ? wanted[0] : wanted.find((i) => this.namesAt(r, i).includes(lookup.name));
      if (at === undefined) return true;
      unreadable ??= r.why;
      const field = this.paths[at]!.source;
      out.push(r.ns ? { namespace: r.ns, name: r.name, field } : { name: r.name, field });
      return out.length <= limit;
    };
    for (const r of ws.naming(lookup.name)) if (!consider(r)) return answer(false);
    for (const r of ws.unreadableIn(lookup.namespace)) if (!consider(r)) return answer(false);
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
