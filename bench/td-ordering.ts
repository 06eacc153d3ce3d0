// Ordering violations read off kcp's watch history (pure): a VPC gone while a VM naming it still existed, terminating
// or not. One workspace on one shard: resourceVersions order events across both types.
import type { Seen } from "./td-history.ts";

export interface Ordering {
  /** VPCs deleted while at least one VM in their namespace still named them. */
  violations: number;
  /** A few of them, `namespace/vpc (n VMs)`. */
  examples: string[];
  /** Objects present at the start whose deletion the watch did not see (the history is incomplete for them). */
  unobserved: number;
  /** Objects present at the start. */
  objects: number;
}

export function orderingOf(events: readonly Seen[]): Ordering {
  // INITIAL records carry the object's own revision, older than any watch event: a stable sort keeps them first.
  const sorted = [...events].sort((a, b) => a.rv - b.rv);
  const vmRef = new Map<string, string>(); // ns/vm -> ns/vpc it names
  const naming = new Map<string, number>(); // ns/vpc -> VMs that exist and name it
  const initial = new Set<string>();
  const deleted = new Set<string>();
  const out: Ordering = { violations: 0, examples: [], unobserved: 0, objects: 0 };
  const move = (vm: string, to: string | undefined): void => {
    const from = vmRef.get(vm);
    if (from !== undefined) naming.set(from, (naming.get(from) ?? 1) - 1);
    if (to === undefined) vmRef.delete(vm);
    else {
      vmRef.set(vm, to);
      naming.set(to, (naming.get(to) ?? 0) + 1);
    }
  };
  for (const e of sorted) {
    const id = `${e.kind}/${e.namespace}/${e.name}`;
    if (e.type === "INITIAL") initial.add(id);
    if (e.type === "DELETED") deleted.add(id);
    if (e.kind === "VM") {
      const key = `${e.namespace}/${e.name}`;
      move(key, e.type === "DELETED" || e.vpc === undefined ? undefined : `${e.namespace}/${e.vpc}`);
      continue;
    }
    if (e.type !== "DELETED") continue;
    const left = naming.get(`${e.namespace}/${e.name}`) ?? 0;
    if (left > 0) {
      out.violations++;
      if (out.examples.length < 3) out.examples.push(`${e.namespace}/${e.name} (${left} VM${left === 1 ? "" : "s"})`);
    }
  }
  out.objects = initial.size;
  for (const id of initial) if (!deleted.has(id)) out.unobserved++;
  return out;
}
