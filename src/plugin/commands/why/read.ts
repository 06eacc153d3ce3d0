// why's reads besides the dry run, thin: the object itself, and for an object being deleted what may hold it (a
// namespace's content, the dependents foregroundDeletion waits for, a workspace's LogicalCluster). Each read the user
// may not make becomes a note, never a failure: the finalizers are the answer, the rest is where readable.
import { isApiError } from "../../../kcp/rest.ts";
import { mapLimit } from "../../../util/concurrency.ts";
import { collectionPath, type ApiResource } from "../../discovery.ts";
import { explain, type Session } from "../../session.ts";
import {
  contentsOf,
  dependentsOf,
  FOREGROUND,
  objectStateOf,
  type Holders,
  type Listed,
  type ObjectState,
  typeName,
} from "./terminating.ts";
import type { WhyTarget } from "./report.ts";

/** Lists at a time; a namespace's types are a few dozen. */
const LISTS_IN_FLIGHT = 8;

/** The object at `path`: its state, "gone" (404), or undefined with a note when the user may not read it. */
export async function readObject(s: Session, path: string, notes: string[]): Promise<ObjectState | "gone" | undefined> {
  try {
    return objectStateOf(await s.ws.get(path));
  } catch (err) {
    if (isApiError(err, 404)) return "gone";
    if (!isApiError(err, 403)) throw err;
    notes.push(`you may not read the object itself (403), so whether it is being deleted is not known`);
    return undefined;
  }
}

/** Every listable type of `resources` (namespaced ones only when `namespace` is set), listed there where readable. */
async function listAll(
  s: Session,
  resources: readonly ApiResource[],
  namespace: string | undefined,
  notes: string[],
): Promise<Listed[]> {
  const types = resources.filter(
    (r) => (r.verbs === undefined || r.verbs.includes("list")) && (namespace === undefined || r.namespaced),
  );
  const unreadable: string[] = [];
  const listed = await mapLimit(types, LISTS_IN_FLIGHT, async (r): Promise<Listed[]> => {
    try {
      const list = await s.ws.listAll<unknown>(collectionPath(r, namespace));
      return [{ type: { group: r.group, name: r.name, kind: r.kind }, items: list.items }];
    } catch (err) {
      if (isApiError(err, 404) || isApiError(err, 405)) return []; // gone meanwhile, or not listable after all
      if (!isApiError(err, 403)) throw explain(err, `list ${typeName(r)} in ${s.workspace}`);
      unreadable.push(typeName(r));
      return [];
    }
  });
  if (unreadable.length > 0)
    notes.push(`you may not list ${unreadable.sort().join(", ")}${namespace ? ` in namespace ${namespace}` : ""}`);
  return listed.flat();
}

/** A workspace's LogicalCluster, read in the workspace itself; undefined with a note when it cannot be read. */
async function readLogicalCluster(s: Session, path: string, notes: string[]): Promise<ObjectState | undefined> {
  try {
    return objectStateOf(await s.base.forCluster(path).get("/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"));
  } catch (err) {
    if (!isApiError(err)) throw err;
    notes.push(`cannot read the LogicalCluster of ${path} (${err.status}${err.reason ? ` ${err.reason}` : ""})`);
    return undefined;
  }
}

const isNamespace = (r: ApiResource): boolean => r.group === "" && r.name === "namespaces";
const isWorkspace = (r: ApiResource): boolean => r.group === "tenancy.kcp.io" && r.name === "workspaces";

/**
 * What may hold an object that is being deleted, as far as the user may read: a namespace's content; with
 * foregroundDeletion, the objects whose ownerReferences name it (in its namespace, or anywhere for a cluster-scoped
 * one); a workspace's LogicalCluster. `resources` is the workspace's discovery.
 */
export async function readHolders(
  s: Session,
  t: WhyTarget,
  state: ObjectState,
  resources: () => Promise<ApiResource[]>,
  notes: string[],
): Promise<Holders> {
  const holders: Holders = {};
  if (isNamespace(t.resource)) holders.contents = contentsOf(await listAll(s, await resources(), t.name, notes));
  if (state.finalizers.includes(FOREGROUND) && state.uid !== undefined)
    holders.dependents = dependentsOf(state.uid, await listAll(s, await resources(), t.namespace, notes));
  if (isWorkspace(t.resource)) {
    const lc = await readLogicalCluster(s, `${s.workspace}:${t.name}`, notes);
    if (lc) holders.logicalCluster = lc;
  }
  return holders;
}
