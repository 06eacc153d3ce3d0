// The teardown planner, pure: objects and "X blocks the delete of Y" edges in, the order to delete them out. An
// object can go once everything that blocks it is gone, so wave 0 holds the objects nothing blocks, and each later
// wave the objects whose blockers all sit in earlier waves. What can never be reached (a cycle, something behind
// it, a blocker outside the teardown, a delete refused for another reason) is named with the reason.
import { stronglyConnected } from "../../../util/graph.ts";
import type { ObjectRef } from "../../objects.ts";

/** Appends to the list under `k` (no copying: a hub with thousands of edges stays linear). */
export function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

export interface PlanObject extends ObjectRef {
  /** objectId: `<group>/<resource>/<namespace>/<name>`; the namespace is empty for cluster-scoped objects. */
  id: string;
  version: string;
  uid?: string;
  /** metadata.finalizers: what holds the object once its delete is accepted. */
  finalizers: string[];
  /** A delete was accepted already (deletionTimestamp set); it goes when its finalizers clear. */
  deleting: boolean;
  /** metadata.deletionTimestamp as kcp wrote it, when deleting: since when the finalizers hold it (the report). */
  deletionTimestamp?: string;
  /** Protection is skipped for it (the annotation is set): nothing blocks its delete. */
  skipProtection: boolean;
  /**
   * The user named it with --skip-protection: it is ordered like the rest, and annotated and deleted only in the
   * final wave, when what still blocks it cannot go first (a cycle through it).
   */
  named?: boolean;
  /**
   * A Secret or ConfigMap: a rule may protect it as a local target, and it never names anything itself, so the run
   * deletes it only once no object of a bound type (a possible dependent) is left.
   */
  localTarget?: boolean;
}

/** `from` (a dependent) blocks the delete of `to`: `from` must go first. */
export interface BlockEdge {
  from: string;
  to: string;
  /** The dependent's field that names `to`, as the webhook's cause says. */
  field?: string;
}

export type StuckReason = "cycle" | "behind-cycle" | "blocked-outside" | "refused" | "behind-stuck";

export interface Stuck {
  id: string;
  reason: StuckReason;
  /** One sentence: the cycle, the outside blockers, the refusal. */
  detail: string;
}

/** What the dry runs found for an object besides edges: blockers not in the teardown, or another refusal. */
export interface Obstacle {
  /** Blockers the webhook named that are not among the objects (another namespace, a type not bound here). */
  outside?: string[];
  /** A refusal that names no blocker (another webhook, RBAC, the webhook unable to decide). */
  refused?: string;
}

export interface Plan {
  objects: PlanObject[];
  edges: BlockEdge[];
  /** Ids, wave by wave; every edge goes from an earlier wave to a later one. */
  waves: string[][];
  /** Each cycle's ids, sorted. */
  cycles: string[][];
  /** Cycle members: one skip-protection per cycle lets the rest go in order. */
  needsSkipProtection: string[];
  stuck: Stuck[];
  /** Objects with finalizers: their delete is accepted, but they go only when the finalizers clear. */
  finalizerHolds: { id: string; finalizers: string[] }[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The edges that count: both ends known, no self-reference, and the blocked object not exempt from protection. */
function usableEdges(byId: ReadonlyMap<string, PlanObject>, edges: readonly BlockEdge[]): BlockEdge[] {
  const seen = new Set<string>();
  const out: BlockEdge[] = [];
  for (const e of edges) {
    const to = byId.get(e.to);
    if (!to || !byId.has(e.from) || e.from === e.to || to.skipProtection) continue;
    const key = `${e.from}\n${e.to}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}

/** Kahn's algorithm by layers, starting only from objects with no obstacle of their own. */
function layers(ids: readonly string[], edges: readonly BlockEdge[], seeded: ReadonlySet<string>): string[][] {
  const blockers = new Map<string, number>(ids.map((id) => [id, 0]));
  const out = new Map<string, string[]>();
  for (const e of edges) {
    blockers.set(e.to, blockers.get(e.to)! + 1);
    push(out, e.from, e.to);
  }
  const waves: string[][] = [];
  let current = ids.filter((id) => blockers.get(id) === 0 && !seeded.has(id));
  while (current.length > 0) {
    waves.push([...current].sort(cmp));
    const next: string[] = [];
    for (const id of current)
      for (const to of out.get(id) ?? []) {
        const left = blockers.get(to)! - 1;
        blockers.set(to, left);
        if (left === 0 && !seeded.has(to)) next.push(to);
      }
    current = next;
  }
  return waves;
}

/** The cycles among `left` (components of more than one object; self-edges were dropped). */
function cyclesAmong(left: readonly string[], edges: readonly BlockEdge[]): string[][] {
  const inLeft = new Set(left);
  const adj = new Map<string, string[]>();
  for (const e of edges) if (inLeft.has(e.from) && inLeft.has(e.to)) push(adj, e.from, e.to);
  const comp = stronglyConnected(left, adj);
  const groups = new Map<number, string[]>();
  for (const [id, c] of comp) push(groups, c, id);
  return [...groups.values()]
    .filter((g) => g.length > 1)
    .map((g) => g.sort(cmp))
    .sort((a, b) => cmp(a[0]!, b[0]!));
}

/** Why each object outside the waves cannot be reached. */
function stuckOf(
  left: readonly string[],
  cycles: readonly string[][],
  edges: readonly BlockEdge[],
  obstacles: ReadonlyMap<string, Obstacle>,
): Stuck[] {
  const onCycle = new Map<string, string[]>();
  for (const c of cycles) for (const id of c) onCycle.set(id, c);
  const leftSet = new Set(left);
  const blockedBy = new Map<string, string[]>();
  for (const e of edges) if (leftSet.has(e.from)) push(blockedBy, e.to, e.from);
  return [...left].sort(cmp).map((id): Stuck => {
    const o = obstacles.get(id);
    if (o?.refused !== undefined) return { id, reason: "refused", detail: o.refused };
    if (o?.outside && o.outside.length > 0)
      return { id, reason: "blocked-outside", detail: `blocked by ${o.outside.join(", ")}, not part of this teardown` };
    const cycle = onCycle.get(id);
    if (cycle) return { id, reason: "cycle", detail: `on a cycle: ${cycle.join(" → ")}` };
    const by = (blockedBy.get(id) ?? []).sort(cmp);
    const behindCycle = by.some((b) => onCycle.has(b));
    return { id, reason: behindCycle ? "behind-cycle" : "behind-stuck", detail: `blocked by ${by.join(", ")}` };
  });
}

/** The waves, cycles, stuck objects and finalizer holds of a set of objects and their blocker edges. */
export function planTeardown(
  objects: readonly PlanObject[],
  edges: readonly BlockEdge[],
  obstacles: ReadonlyMap<string, Obstacle> = new Map(),
): Plan {
  const sorted = [...objects].sort((a, b) => cmp(a.id, b.id));
  const byId = new Map(sorted.map((o) => [o.id, o]));
  const usable = usableEdges(byId, edges);
  const ids = sorted.map((o) => o.id);
  const seeded = new Set([...obstacles.entries()].filter(([id, o]) => byId.has(id) && isObstacle(o)).map(([id]) => id));
  const ordered = layers(ids, usable, seeded);
  const waves = [...ordered, ...finalWave(unplaced(ids, ordered), usable, seeded, byId)];
  const left = unplaced(ids, waves);
  const cycles = cyclesAmong(left, usable);
  return {
    objects: sorted,
    edges: usable,
    waves,
    cycles,
    needsSkipProtection: cycles.flat().sort(cmp),
    stuck: stuckOf(left, cycles, usable, obstacles),
    finalizerHolds: sorted.filter((o) => o.finalizers.length > 0).map((o) => ({ id: o.id, finalizers: o.finalizers })),
  };
}

/**
 * What the ordered waves leave, once the objects the user named for skip-protection stop waiting for their blockers
 * (the run annotates them only then): the cycles through them, broken last. Empty when none is named.
 */
function finalWave(
  left: readonly string[],
  edges: readonly BlockEdge[],
  seeded: ReadonlySet<string>,
  byId: ReadonlyMap<string, PlanObject>,
): string[][] {
  if (!left.some((id) => byId.get(id)?.named)) return [];
  const inLeft = new Set(left);
  const among = edges.filter((e) => inLeft.has(e.from) && inLeft.has(e.to) && !byId.get(e.to)?.named);
  return layers(left, among, seeded);
}

function unplaced(ids: readonly string[], waves: readonly string[][]): string[] {
  const placed = new Set(waves.flat());
  return ids.filter((id) => !placed.has(id));
}

const isObstacle = (o: Obstacle): boolean => o.refused !== undefined || (o.outside?.length ?? 0) > 0;

/** A plan is complete when every object is in a wave. */
export const planComplete = (p: Plan): boolean => p.stuck.length === 0;
