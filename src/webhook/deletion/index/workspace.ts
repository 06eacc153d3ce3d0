// One consumer workspace's part of a ReferenceStore: its dependents by namespace and name, referenced name → the
// records naming it, the unreadable records by namespace, and what the workspace costs against its budget (budget.ts).
import type { UnreadableReason } from "./budget.ts";
import type { Rec } from "./record.ts";

/** One record (the common case: one dependent names an object) or several. */
type Recs = Rec | Set<Rec>;

/** One namespace of a workspace ("" for cluster-scoped dependents). `name` is the copy its records share. */
interface Namespace {
  readonly name: string;
  readonly records: Map<string, Rec>;
  readonly unreadable: Set<Rec>;
}

export class WorkspaceIndex {
  readonly cluster: string;
  /** Objects of this workspace in the store, readable or not. */
  objects = 0;
  /** Heap bytes (budget.ts, INDEX_COST) of this workspace's dependents, readable or not. */
  bytes = 0;
  /** The ledger took this workspace's charge in this store (ceiling.ts): its dependents are kept unreadable. */
  demoted = false;
  private readonly spaces = new Map<string, Namespace>();
  private readonly byName = new Map<string, Recs>();
  private readonly reasons: Record<UnreadableReason, number> = { names: 0, budget: 0, share: 0 };

  constructor(cluster: string) {
    this.cluster = cluster;
  }

  /** The shared copy of a namespace name (held once however many records are in it). */
  namespace(ns: string): string {
    return this.spaces.get(ns)?.name ?? ns;
  }

  record(ns: string, name: string): Rec | undefined {
    return this.spaces.get(ns)?.records.get(name);
  }

  /** Holds `rec` (in place of none: the store takes out an old one first) and counts it against the budget. */
  put(rec: Rec): void {
    let space = this.spaces.get(rec.ns);
    if (!space) this.spaces.set(rec.ns, (space = { name: rec.ns, records: new Map(), unreadable: new Set() }));
    space.records.set(rec.name, rec);
    if (rec.why) {
      space.unreadable.add(rec);
      this.reasons[rec.why]++;
    }
    this.objects++;
    this.bytes += rec.bytes;
  }

  /** Lets go of `rec` (the reverse map's entries are the caller's: it knows the names). */
  take(rec: Rec): void {
    const space = this.spaces.get(rec.ns);
    if (!space?.records.delete(rec.name)) return;
    if (rec.why) {
      space.unreadable.delete(rec);
      this.reasons[rec.why]--;
    }
    if (space.records.size === 0) this.spaces.delete(rec.ns);
    this.objects--;
    this.bytes -= rec.bytes;
  }

  /** Every record, readable or not. */
  *records(): Iterable<Rec> {
    for (const space of this.spaces.values()) yield* space.records.values();
  }

  /** The readable records (a snapshot: the caller may change them). */
  readable(): Rec[] {
    const out: Rec[] = [];
    for (const r of this.records()) if (!r.why) out.push(r);
    return out;
  }

  add(name: string, rec: Rec): void {
    const have = this.byName.get(name);
    if (have === undefined) this.byName.set(name, rec);
    else if (have instanceof Set) have.add(rec);
    else if (have !== rec) this.byName.set(name, new Set([have, rec]));
  }

  remove(name: string, rec: Rec): void {
    const have = this.byName.get(name);
    if (have === undefined) return;
    if (!(have instanceof Set)) {
      if (have === rec) this.byName.delete(name);
      return;
    }
    have.delete(rec);
    if (have.size === 1) this.byName.set(name, have.values().next().value!);
  }

  /** Whether a readable record names `name`. */
  named(name: string): boolean {
    return this.byName.has(name);
  }

  /** The readable records naming `name`. */
  naming(name: string): Iterable<Rec> {
    const recs = this.byName.get(name);
    if (recs === undefined) return [];
    return recs instanceof Set ? recs : [recs];
  }

  /** Unreadable records a lookup in `namespace` must count (all of them for a cluster-scoped target). */
  *unreadableIn(namespace: string | undefined): Iterable<Rec> {
    if (this.reasons.names + this.reasons.budget + this.reasons.share === 0) return;
    if (namespace === undefined) {
      for (const space of this.spaces.values()) yield* space.unreadable;
      return;
    }
    yield* this.spaces.get(namespace)?.unreadable ?? [];
    if (namespace !== "") yield* this.spaces.get("")?.unreadable ?? [];
  }

  /** The reasons this workspace has unreadable objects for. */
  unreadableReasons(): UnreadableReason[] {
    return (Object.keys(this.reasons) as UnreadableReason[]).filter((r) => this.reasons[r] > 0);
  }
}
