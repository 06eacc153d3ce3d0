// One dependent as a ReferenceStore keeps it, and what keeping it readable costs on the heap (budget.ts, INDEX_COST).
import { INDEX_COST, type UnreadableReason } from "./budget.ts";
import type { WorkspaceIndex } from "./workspace.ts";

/** The names at one path: none (""), one name, or several. */
export type Ref = string | readonly string[];

/**
 * One dependent. Its workspace holds it by namespace and name, and the reverse map holds the record itself, so no
 * key string is kept per dependent (bench/README.md, "What the index holds"). `ns` is the workspace's shared copy.
 * `refs` is the Ref of the only path, or one per path; null when unreadable (see `why`).
 */
export class Rec {
  readonly ns: string;
  readonly name: string;
  readonly refs: Ref | readonly Ref[] | null;
  readonly why: UnreadableReason | undefined;
  readonly bytes: number;
  constructor(
    ns: string,
    name: string,
    refs: Ref | readonly Ref[] | null,
    why: UnreadableReason | undefined,
    bytes: number,
  ) {
    this.ns = ns;
    this.name = name;
    this.refs = refs;
    this.why = why;
    this.bytes = bytes;
  }
}

export const refList = (r: Ref): readonly string[] => (typeof r === "string" ? (r === "" ? [] : [r]) : r);

/**
 * Heap bytes of keeping a dependent readable (INDEX_COST): `perPath` its names at each path; a name already in `ws`
 * costs a record-set entry, a new one a reverse-map entry. A record keeps what it was charged, so its removal gives
 * back exactly that, whatever the workspace holds by then.
 */
export function readableCost(ws: WorkspaceIndex, name: string, perPath: readonly Ref[]): number {
  let bytes = INDEX_COST.dependent + name.length;
  const seen = new Set<string>();
  for (const r of perPath) {
    if (typeof r !== "string") bytes += INDEX_COST.list + r.length * INDEX_COST.listSlot;
    for (const n of refList(r)) {
      if (seen.has(n)) continue;
      seen.add(n);
      bytes += n.length + (ws.named(n) ? INDEX_COST.sharedName : INDEX_COST.newName);
    }
  }
  return bytes;
}

/** What an unreadable dependent costs: its record and name only (it is not in the reverse map). */
export const unreadableCost = (name: string): number => INDEX_COST.unreadable + name.length;
