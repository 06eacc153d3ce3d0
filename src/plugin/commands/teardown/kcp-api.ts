// Teardown's I/O against kcp through the one REST client, with the user's own rights: the types the workspace binds
// (its APIBindings' boundResources, resolved by discovery) and the core types a rule may protect as local targets
// (Secrets, ConfigMaps), their objects in scope, dry-run and real DELETEs with the
// object's uid as precondition (a new object of the same name is never deleted in its place), and the annotation,
// uid-preconditioned too.
import { LOCAL_TARGET_RESOURCES } from "../../../api/schema.ts";
import { SKIP_PROTECTION_ANNOTATION } from "../../../api/types.ts";
import { isApiError } from "../../../kcp/rest.ts";
import { isRecord } from "../../../util/json.ts";
import { collectionPath, type ApiResource } from "../../discovery.ts";
import { annotated, objectId, objectOf } from "../../objects.ts";
import { deleteAnswer, discover, explain, PluginError, type Session } from "../../session.ts";
import type { PlanObject } from "./plan.ts";
import type { TeardownApi } from "./survey.ts";

const APIBINDINGS = "/apis/apis.kcp.io/v1alpha1/apibindings";

/** What to take down: one namespace, or the whole workspace (every namespace and the cluster-scoped objects). */
export type Scope = { namespace: string } | { workspace: true };

/** A core type a rule may protect as a local target (a Secret, a ConfigMap): it never names anything itself. */
export const isLocalTargetType = (r: { group: string; name: string }): boolean =>
  r.group === "" && (LOCAL_TARGET_RESOURCES as readonly string[]).includes(r.name);

/**
 * Objects of a local-target type that the platform owns and would make again or needs: a ServiceAccount's legacy
 * token Secret (deleting it revokes a credential, perhaps the one this teardown runs with) and the namespace's
 * `kube-root-ca.crt`, which kcp publishes again at once (a run that deleted it would find it back every round).
 * They go with their ServiceAccount or namespace.
 */
export function platformOwned(r: { group: string; name: string }, item: unknown): boolean {
  if (!isLocalTargetType(r) || !isRecord(item)) return false;
  if (r.name === "secrets") return item["type"] === "kubernetes.io/service-account-token";
  return isRecord(item["metadata"]) && item["metadata"]["name"] === "kube-root-ca.crt";
}

/**
 * What a teardown takes down: the bound types (boundTypes) and the local-target types (isLocalTargetType), which a
 * rule of any of those types' providers may protect in this workspace without the workspace binding anything for it.
 */
export async function teardownTypes(s: Session): Promise<ApiResource[]> {
  return (await servedTypes(s)).filter((r) => r.bound || isLocalTargetType(r));
}

/** The group/resources the workspace's APIBindings bind, as discovery serves them. */
export async function boundTypes(s: Session): Promise<ApiResource[]> {
  return (await servedTypes(s)).filter((r) => r.bound);
}

/** Every type discovery serves, each marked whether the workspace's APIBindings bind it (kcp's own APIs never). */
async function servedTypes(s: Session): Promise<(ApiResource & { bound: boolean })[]> {
  let bindings: unknown[];
  try {
    bindings = (await s.ws.listAll<unknown>(APIBINDINGS)).items;
  } catch (err) {
    throw explain(err, `list the APIBindings of ${s.workspace}`);
  }
  const bound = new Set<string>();
  for (const b of bindings) {
    const status = isRecord(b) && isRecord(b["status"]) ? b["status"] : {};
    const resources = Array.isArray(status["boundResources"]) ? status["boundResources"] : [];
    for (const r of resources)
      if (isRecord(r) && typeof r["resource"] === "string")
        bound.add(`${typeof r["group"] === "string" ? r["group"] : ""}/${r["resource"]}`);
  }
  const served = await discover(s, "");
  // kcp's own bound APIs (tenancy.kcp.io's workspaces and the like) are the platform, not content to take down.
  return served.map((r) => ({ ...r, bound: bound.has(`${r.group}/${r.name}`) && !r.group.endsWith(".kcp.io") }));
}

/** A listed object as the planner sees it; undefined for something that is no object. */
export function toPlanObject(r: ApiResource, item: unknown, named: ReadonlySet<string>): PlanObject | undefined {
  const found = objectOf(r, item);
  if (!found) return undefined;
  const { ref, meta } = found;
  const id = objectId(ref);
  return {
    ...ref,
    id,
    version: r.version,
    ...(typeof meta["uid"] === "string" ? { uid: meta["uid"] } : {}),
    finalizers: Array.isArray(meta["finalizers"]) ? meta["finalizers"].map(String) : [],
    deleting: typeof meta["deletionTimestamp"] === "string",
    ...(typeof meta["deletionTimestamp"] === "string" ? { deletionTimestamp: meta["deletionTimestamp"] } : {}),
    skipProtection: annotated(meta, SKIP_PROTECTION_ANNOTATION),
    ...(named.has(id) ? { named: true } : {}),
    ...(isLocalTargetType(r) ? { localTarget: true } : {}),
  };
}

const objectPath = (o: PlanObject): string =>
  `${collectionPath({ group: o.group, version: o.version, name: o.resource }, o.namespace)}/${encodeURIComponent(o.name)}`;

/**
 * The kcp adapter. `named` are the ids the user allowed skip-protection for; `types` the types to take down, found
 * once (a type bound during the teardown is not taken down). A local-target type the user may not list is left
 * alone, said once through `note`: the user's Secrets are not the teardown's to require.
 */
export function kcpTeardownApi(
  s: Session,
  scope: Scope,
  types: readonly ApiResource[],
  named: ReadonlySet<string>,
  note: (line: string) => void = () => undefined,
) {
  const inScope = types.filter((t) => "workspace" in scope || t.namespaced);
  const unlisted = new Set<string>();
  const listType = async (r: ApiResource): Promise<unknown[]> => {
    try {
      return (await s.ws.listAll<unknown>(collectionPath(r, "namespace" in scope ? scope.namespace : undefined))).items;
    } catch (err) {
      if (isApiError(err, 404)) return []; // unbound meanwhile: nothing of it left to take down
      if (!isApiError(err, 403) || !isLocalTargetType(r))
        throw explain(err, `list ${r.name}.${r.group} in ${s.workspace}`);
      if (!unlisted.has(r.name)) note(`you may not list ${r.name} in ${s.workspace}: they are left alone`);
      unlisted.add(r.name);
      return [];
    }
  };
  const api: TeardownApi = {
    async list() {
      const out: PlanObject[] = [];
      for (const r of inScope) {
        for (const item of await listType(r)) {
          const o = platformOwned(r, item) ? undefined : toPlanObject(r, item, named);
          if (o) out.push(o);
        }
      }
      return out;
    },
    dryRun: (o) => deleteAnswer(() => s.ws.request("DELETE", objectPath(o), { query: { dryRun: "All" } }), true),
    delete: (o) =>
      deleteAnswer(
        () =>
          s.ws.request("DELETE", objectPath(o), {
            body: {
              apiVersion: "v1",
              kind: "DeleteOptions",
              propagationPolicy: "Background",
              ...(o.uid ? { preconditions: { uid: o.uid } } : {}),
            },
          }),
        true,
      ),
    async get(o) {
      const r = { group: o.group, version: o.version, name: o.resource, kind: o.kind, namespaced: !!o.namespace };
      try {
        const item = await s.ws.getOptional<unknown>(objectPath(o));
        const now = item === undefined ? undefined : toPlanObject(r, item, named);
        return now && (!o.uid || now.uid === o.uid) ? now : undefined;
      } catch (err) {
        throw explain(err, `read ${o.resource}/${o.name} in ${s.workspace}`);
      }
    },
    annotate: (o, on) => annotate(s, o, on),
  };
  return api;
}

/**
 * The skip-protection annotation set or removed by a merge patch that names the uid: the apiserver keeps a uid given
 * and refuses to change it (422, uid is immutable), so the patch applies only to the object listed, never to a new
 * one of the same name.
 */
async function annotate(s: Session, o: PlanObject, on: boolean): Promise<"done" | "replaced"> {
  const metadata = {
    ...(o.uid ? { uid: o.uid } : {}),
    annotations: { [SKIP_PROTECTION_ANNOTATION]: on ? "true" : null },
  };
  try {
    await s.ws.request("PATCH", objectPath(o), { body: { metadata }, contentType: "application/merge-patch+json" });
    return "done";
  } catch (err) {
    if (isApiError(err, 404) || isApiError(err, 409) || isApiError(err, 422)) return "replaced";
    throw explain(err, `${on ? "set" : "remove"} ${SKIP_PROTECTION_ANNOTATION} on ${o.resource}/${o.name}`);
  }
}

/** `vpc/my-vpc`, `vpcs.network.test.io/my-vpc` or `vpc/team-a/my-vpc` (--skip-protection) → the object's id. */
export function namedIds(specs: readonly string[], types: readonly ApiResource[], namespace?: string): Set<string> {
  const ids = new Set<string>();
  for (const spec of specs) {
    // `<resource>/<namespace>/<name>` names a namespaced object in a whole-workspace teardown.
    const parts = spec.split("/");
    const [query, ns, name] = parts.length === 3 ? parts : [parts[0], namespace, parts[1]];
    if (!query || !name || parts.length > 3 || parts.some((p) => p === ""))
      throw new PluginError(`--skip-protection ${spec}: want <resource>/<name> or <resource>/<namespace>/<name>`);
    const q = query.toLowerCase();
    const [resource, ...group] = q.split(".");
    const found = types.filter(
      (t) =>
        (group.length === 0 || t.group === group.join(".")) &&
        [t.name, t.singularName, t.kind.toLowerCase(), ...(t.shortNames ?? [])].includes(resource),
    );
    if (found.length !== 1)
      throw new PluginError(`--skip-protection ${spec}: ${found.length === 0 ? "no such bound type" : "ambiguous"}`);
    const t = found[0]!;
    ids.add(objectId({ group: t.group, resource: t.name, ...(t.namespaced && ns ? { namespace: ns } : {}), name }));
  }
  return ids;
}
