// The dependents index of one dependent type on one endpoint (shard): for every object, only the names it references
// at the rules' field paths, plus a reverse map (consumer logical cluster, referenced name) → namespace → objects.
// A DELETE is answered from the reverse map in time proportional to what it returns, never to the type's size.
// It is the informer's store (src/kcp/informer.ts), so it changes in the same step as the watch that feeds it:
// there is no second copy of the objects to drift from.
import { evaluate, MAX_VISITED_VALUES, type FieldPath } from "../../../fieldpath/fieldpath.ts";
import { CLUSTER_ANNOTATION } from "../../../api/types.ts";
import type { EndpointStore } from "../../../kcp/informer.ts";
import { asRecord, nonEmptyString } from "../../../util/json.ts";
import type { Dependent, Lookup } from "../../admission.ts";

/** What the index keeps of one dependent object; `names[i]` is what it names at path i, null past the read cap. */
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

const SEP = "\n"; // occurs in no logical cluster name or object name

export class ReferenceStore implements EndpointStore<unknown, IndexedDependent> {
  /** The field paths tracked, in a fixed order; a record's `names` follow it. */
  readonly paths: readonly FieldPath[];
  private readonly records = new Map<string, IndexedDependent>();
  /** `<cluster>\n<referenced name>` → namespace → object keys. */
  private readonly byName = new Map<string, Map<string, Set<string>>>();
  /** Objects too large to read at some path, per cluster: they count as referencing every name (fail closed). */
  private readonly unread = new Map<string, Set<string>>();
  private readonly readCap: number;
  /** Objects per consumer logical cluster: a consumer lives on one shard, so a store that has any is its shard's. */
  private readonly perCluster = new Map<string, number>();

  constructor(paths: readonly FieldPath[], readCap: number = MAX_VISITED_VALUES) {
    this.paths = paths;
    this.readCap = readCap;
  }

  get size(): number {
    return this.records.size;
  }

  /** Whether this endpoint holds any object of `cluster` (then that workspace is on this endpoint's shard). */
  hasCluster(cluster: string): boolean {
    return this.perCluster.has(cluster);
  }

  values(): Iterable<IndexedDependent> {
    return this.records.values();
  }

  set(key: string, obj: unknown): void {
    this.delete(key);
    const record = this.compact(obj);
    if (!record) return;
    this.records.set(key, record);
    this.perCluster.set(record.cluster, (this.perCluster.get(record.cluster) ?? 0) + 1);
    for (const names of record.names) {
      if (names === null) {
        add(this.unread, record.cluster, key);
        continue;
      }
      for (const n of names) {
        const byNs = this.byName.get(record.cluster + SEP + n) ?? new Map<string, Set<string>>();
        this.byName.set(record.cluster + SEP + n, byNs);
        add(byNs, record.namespace, key);
      }
    }
  }

  delete(key: string): void {
    const record = this.records.get(key);
    if (!record) return;
    this.records.delete(key);
    const left = (this.perCluster.get(record.cluster) ?? 1) - 1;
    if (left > 0) this.perCluster.set(record.cluster, left);
    else this.perCluster.delete(record.cluster);
    for (const names of record.names) {
      if (names === null) {
        remove(this.unread, record.cluster, key);
        continue;
      }
      for (const n of names) {
        const byNs = this.byName.get(record.cluster + SEP + n);
        if (!byNs) continue;
        remove(byNs, record.namespace, key);
        if (byNs.size === 0) this.byName.delete(record.cluster + SEP + n);
      }
    }
  }

  /**
   * The dependents of `lookup` (at most `limit + 1`, so the caller can tell "more"), with the first of its paths at
   * which each names the target. A namespaced target sees its own namespace and cluster-scoped dependents; a
   * cluster-scoped target sees all. Throws NotIndexedError for a path this store does not track.
   */
  find(lookup: Lookup, limit: number): { dependents: Dependent[]; complete: boolean } {
    const wanted = lookup.fieldPaths.map((p) => {
      const i = this.paths.findIndex((q) => q.source === p.source);
      if (i < 0) throw new NotIndexedError(`field path ${p.source} is not indexed yet`);
      return i;
    });
    const out: Dependent[] = [];
    const seen = new Set<string>();
    const consider = (key: string): boolean => {
      if (seen.has(key)) return true;
      seen.add(key);
      const r = this.records.get(key);
      if (!r) return true;
      if (lookup.self && lookup.self.name === r.name && (lookup.self.namespace ?? "") === r.namespace) return true;
      const at = wanted.find((i) => {
        const names = r.names[i];
        return names === null || names === undefined || names.includes(lookup.name);
      });
      if (at === undefined) return true;
      const field = this.paths[at]!.source;
      out.push(r.namespace ? { namespace: r.namespace, name: r.name, field } : { name: r.name, field });
      return out.length <= limit;
    };
    const byNs = this.byName.get(lookup.consumer + SEP + lookup.name);
    const namespaces = lookup.namespace === undefined ? [...(byNs?.keys() ?? [])] : [lookup.namespace, ""];
    for (const ns of namespaces)
      for (const key of byNs?.get(ns) ?? []) if (!consider(key)) return { dependents: out, complete: false };
    for (const key of this.unread.get(lookup.consumer) ?? []) {
      const r = this.records.get(key);
      if (lookup.namespace !== undefined && r && r.namespace !== lookup.namespace && r.namespace !== "") continue;
      if (!consider(key)) return { dependents: out, complete: false };
    }
    return { dependents: out, complete: true };
  }

  /** The record of a raw object, or undefined when it has no name or workspace (nothing could ever look it up). */
  private compact(obj: unknown): IndexedDependent | undefined {
    const meta = asRecord(asRecord(obj)?.["metadata"]);
    const name = nonEmptyString(meta?.["name"]);
    const cluster = nonEmptyString(asRecord(meta?.["annotations"])?.[CLUSTER_ANNOTATION]);
    if (name === undefined || cluster === undefined) return undefined;
    const names = this.paths.map((p) => {
      const e = evaluate(obj, p, this.readCap);
      return e.complete ? e.names : null;
    });
    return { cluster, namespace: nonEmptyString(meta?.["namespace"]) ?? "", name, names };
  }
}

function add<K>(map: Map<K, Set<string>>, key: K, value: string): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function remove<K>(map: Map<K, Set<string>>, key: K, value: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
