// One consumer workspace's part of a ReferenceStore: referenced name → the keys of the objects naming it, the
// unreadable objects by namespace, and what the workspace costs against its budget (budget.ts).
import type { UnreadableReason } from "./budget.ts";

/** One key (the common case: one dependent names an object) or several. */
export type Keys = string | Set<string>;

export class WorkspaceIndex {
  readonly cluster: string;
  /** Objects of this workspace in the store, readable or not. */
  objects = 0;
  /** Heap bytes (budget.ts, INDEX_COST) of this workspace's dependents, readable or not. */
  bytes = 0;
  /** The ledger took this workspace's charge in this store (ceiling.ts): its dependents are kept unreadable. */
  demoted = false;
  private readonly byName = new Map<string, Keys>();
  /** namespace ("" cluster-scoped) → keys of unreadable objects. */
  private readonly unread = new Map<string, Set<string>>();
  private readonly reasons: Record<UnreadableReason, number> = { names: 0, budget: 0, share: 0 };
  /** Namespace strings shared by this workspace's records. */
  private readonly namespaces = new Map<string, string>();

  constructor(cluster: string) {
    this.cluster = cluster;
  }

  /** The shared copy of a namespace name (held once however many records are in it). */
  namespace(ns: string): string {
    const have = this.namespaces.get(ns);
    if (have !== undefined) return have;
    this.namespaces.set(ns, ns);
    return ns;
  }

  add(name: string, key: string): void {
    const have = this.byName.get(name);
    if (have === undefined) this.byName.set(name, key);
    else if (typeof have === "string") {
      if (have !== key) this.byName.set(name, new Set([have, key]));
    } else have.add(key);
  }

  remove(name: string, key: string): void {
    const have = this.byName.get(name);
    if (have === undefined) return;
    if (typeof have === "string") {
      if (have === key) this.byName.delete(name);
      return;
    }
    have.delete(key);
    if (have.size === 1) this.byName.set(name, have.values().next().value!);
  }

  /** The keys of the readable dependents that name anything, each once (a snapshot: the caller may change them). */
  readableKeys(): string[] {
    const out = new Set<string>();
    for (const keys of this.byName.values())
      if (typeof keys === "string") out.add(keys);
      else for (const k of keys) out.add(k);
    return [...out];
  }

  keysNaming(name: string): Keys | undefined {
    return this.byName.get(name);
  }

  addUnreadable(ns: string, key: string, why: UnreadableReason): void {
    const set = this.unread.get(ns);
    if (set) set.add(key);
    else this.unread.set(ns, new Set([key]));
    this.reasons[why]++;
  }

  removeUnreadable(ns: string, key: string, why: UnreadableReason): void {
    const set = this.unread.get(ns);
    if (!set) return;
    set.delete(key);
    if (set.size === 0) this.unread.delete(ns);
    this.reasons[why]--;
  }

  /** Keys of unreadable objects a lookup in `namespace` must count (all of them for a cluster-scoped target). */
  *unreadableIn(namespace: string | undefined): Iterable<string> {
    if (this.unread.size === 0) return;
    if (namespace === undefined) {
      for (const set of this.unread.values()) yield* set;
      return;
    }
    yield* this.unread.get(namespace) ?? [];
    if (namespace !== "") yield* this.unread.get("") ?? [];
  }

  /** The reasons this workspace has unreadable objects for. */
  unreadableReasons(): UnreadableReason[] {
    return (Object.keys(this.reasons) as UnreadableReason[]).filter((r) => this.reasons[r] > 0);
  }
}
