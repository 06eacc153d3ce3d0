// What keeps an object Terminating, pure: its deletionTimestamp (and how long ago that was, by the clock given), each
// finalizer with who usually removes it, its ownerReferences, its conditions; for foregroundDeletion the dependents
// still there; for a namespace the objects still in it; for a workspace its LogicalCluster. The reads that feed it are
// in read.ts; the text and JSON that show it in report.ts and terminating-text.ts.
import { isRecord } from "../../../util/json.ts";
import { finalizerOwner, secondsSince } from "../../finalizers.ts";

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** What why reads of one object. */
export interface ObjectState {
  uid?: string;
  deletionTimestamp?: string;
  finalizers: string[];
  /** A namespace's own `spec.finalizers` (`kubernetes`), which hold it besides metadata's. */
  specFinalizers: string[];
  ownerReferences: OwnerRef[];
  conditions: Condition[];
  phase?: string;
}

export interface HeldFinalizer {
  name: string;
  /** `metadata.finalizers`, or a namespace's `spec.finalizers`. */
  in: "metadata" | "spec";
  /** Who usually removes it (finalizers.ts). */
  owner: string;
  note?: string;
}

/** An object still there that holds the one asked about: a namespace's content, or a dependent. */
export interface Remaining {
  /** `<resource>.<group>`, or the resource alone for the core group. */
  type: string;
  kind: string;
  namespace?: string;
  name: string;
  /** It is being deleted itself (its own deletionTimestamp). */
  deleting: boolean;
  finalizers: string[];
}

export interface Dependent extends Remaining {
  /** Its ownerReference says blockOwnerDeletion: foregroundDeletion waits for it. */
  blocksOwnerDeletion: boolean;
}

/** A listing of one type (a namespace's content, or where dependents may be). */
export interface Listed {
  type: { group: string; name: string; kind: string };
  items: readonly unknown[];
}

export interface Terminating {
  /** The deletionTimestamp as kcp wrote it. */
  since: string;
  /** Whole seconds from `since` to now; undefined when `since` is no time. */
  ageSeconds?: number;
  finalizers: HeldFinalizer[];
  ownerReferences: OwnerRef[];
  phase?: string;
  conditions: Condition[];
  /** With foregroundDeletion: the objects whose ownerReferences name this one. */
  dependents?: Dependent[];
  /** A namespace: the objects still in it, by type (of the types that could be read). */
  contents?: Remaining[];
  /** A workspace: its LogicalCluster, read in the workspace itself. */
  logicalCluster?: { deletionTimestamp?: string; phase?: string; finalizers: HeldFinalizer[]; conditions: Condition[] };
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);
const text = (r: Record<string, unknown>, key: string): string | undefined =>
  typeof r[key] === "string" && r[key] !== "" ? r[key] : undefined;

function ownerRefsOf(v: unknown): OwnerRef[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord).map((o) => ({
    apiVersion: text(o, "apiVersion") ?? "",
    kind: text(o, "kind") ?? "",
    name: text(o, "name") ?? "",
    uid: text(o, "uid") ?? "",
    ...(typeof o["controller"] === "boolean" ? { controller: o["controller"] } : {}),
    ...(typeof o["blockOwnerDeletion"] === "boolean" ? { blockOwnerDeletion: o["blockOwnerDeletion"] } : {}),
  }));
}

function conditionsOf(v: unknown): Condition[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord).flatMap((c) => {
    const type = text(c, "type");
    if (type === undefined) return [];
    const reason = text(c, "reason");
    const message = text(c, "message");
    return [{ type, status: text(c, "status") ?? "", ...(reason ? { reason } : {}), ...(message ? { message } : {}) }];
  });
}

/** An object as kcp returned it → what why reads of it. Anything malformed reads as absent. */
export function objectStateOf(obj: unknown): ObjectState {
  const o = isRecord(obj) ? obj : {};
  const meta = isRecord(o["metadata"]) ? o["metadata"] : {};
  const spec = isRecord(o["spec"]) ? o["spec"] : {};
  const status = isRecord(o["status"]) ? o["status"] : {};
  const uid = text(meta, "uid");
  const deletionTimestamp = text(meta, "deletionTimestamp");
  const phase = text(status, "phase");
  return {
    ...(uid ? { uid } : {}),
    ...(deletionTimestamp ? { deletionTimestamp } : {}),
    finalizers: strings(meta["finalizers"]),
    specFinalizers: strings(spec["finalizers"]),
    ownerReferences: ownerRefsOf(meta["ownerReferences"]),
    conditions: conditionsOf(status["conditions"]),
    ...(phase ? { phase } : {}),
  };
}

/** `<resource>.<group>`, or the resource alone for the core group, as kubectl names a type. */
export const typeName = (t: { group: string; name: string }): string =>
  t.group === "" ? t.name : `${t.name}.${t.group}`;

/** Every named object of the listings, as what remains; sorted by type, namespace, name. */
export function remainingOf(listings: readonly Listed[]): (Remaining & { ownerReferences: OwnerRef[] })[] {
  const out: (Remaining & { ownerReferences: OwnerRef[] })[] = [];
  for (const l of listings)
    for (const item of l.items) {
      const meta = isRecord(item) && isRecord(item["metadata"]) ? item["metadata"] : undefined;
      const name = meta && text(meta, "name");
      if (!meta || !name) continue;
      const ns = text(meta, "namespace");
      out.push({
        type: typeName(l.type),
        kind: l.type.kind,
        ...(ns ? { namespace: ns } : {}),
        name,
        deleting: text(meta, "deletionTimestamp") !== undefined,
        finalizers: strings(meta["finalizers"]),
        ownerReferences: ownerRefsOf(meta["ownerReferences"]),
      });
    }
  const key = (r: Remaining): string => `${r.type}\u0000${r.namespace ?? ""}\u0000${r.name}`;
  return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** A namespace's listings → the objects still in it. */
export const contentsOf = (listings: readonly Listed[]): Remaining[] =>
  remainingOf(listings).map(({ ownerReferences: _, ...r }) => r);

/** The listed objects whose ownerReferences name `uid`: the dependents the garbage collector counts. */
export function dependentsOf(uid: string, listings: readonly Listed[]): Dependent[] {
  return remainingOf(listings).flatMap(({ ownerReferences, ...r }) => {
    const ref = ownerReferences.find((o) => o.uid === uid);
    return ref ? [{ ...r, blocksOwnerDeletion: ref.blockOwnerDeletion === true }] : [];
  });
}

export const FOREGROUND = "foregroundDeletion";

export function heldFinalizers(s: ObjectState): HeldFinalizer[] {
  const held = (name: string, where: HeldFinalizer["in"]): HeldFinalizer => ({
    name,
    in: where,
    ...finalizerOwner(name),
  });
  return [...s.finalizers.map((f) => held(f, "metadata")), ...s.specFinalizers.map((f) => held(f, "spec"))];
}

/** What the caller read besides the object: each is set only when it applies and could be read. */
export interface Holders {
  dependents?: Dependent[];
  contents?: Remaining[];
  logicalCluster?: ObjectState;
}

/** The object's state and what holds it → the explanation; undefined when the object is not being deleted. */
export function terminatingOf(s: ObjectState, nowMs: number, holders: Holders = {}): Terminating | undefined {
  if (s.deletionTimestamp === undefined) return undefined;
  const ageSeconds = secondsSince(s.deletionTimestamp, nowMs);
  const lc = holders.logicalCluster;
  return {
    since: s.deletionTimestamp,
    ...(ageSeconds !== undefined ? { ageSeconds } : {}),
    finalizers: heldFinalizers(s),
    ownerReferences: s.ownerReferences,
    ...(s.phase ? { phase: s.phase } : {}),
    conditions: s.conditions,
    ...(holders.dependents ? { dependents: holders.dependents } : {}),
    ...(holders.contents ? { contents: holders.contents } : {}),
    ...(lc
      ? {
          logicalCluster: {
            ...(lc.deletionTimestamp ? { deletionTimestamp: lc.deletionTimestamp } : {}),
            ...(lc.phase ? { phase: lc.phase } : {}),
            finalizers: heldFinalizers(lc),
            conditions: lc.conditions,
          },
        }
      : {}),
  };
}
