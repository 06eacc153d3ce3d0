// Teardown's I/O against kcp through the one REST client, with the user's own rights: the types the workspace binds
// (its APIBindings' boundResources, resolved by discovery), their objects in scope, dry-run and real DELETEs with the
// object's uid as precondition (a new object of the same name is never deleted in its place), and the annotation.
import { SKIP_PROTECTION_ANNOTATION } from "../../api/types.ts";
import { isApiError } from "../../kcp/rest.ts";
import { isRecord } from "../../util/json.ts";
import { parseRefusal } from "../causes.ts";
import { collectionPath, type ApiResource } from "../discovery.ts";
import { discover, explain, PluginError, type Session } from "../source.ts";
import { objectId, type PlanObject } from "./plan.ts";
import type { DeleteAnswer, TeardownApi } from "./survey.ts";

const APIBINDINGS = "/apis/apis.kcp.io/v1alpha1/apibindings";

/** What to take down: one namespace, or the whole workspace (every namespace and the cluster-scoped objects). */
export type Scope = { namespace: string } | { workspace: true };

/** The group/resources the workspace's APIBindings bind, as discovery serves them. */
export async function boundTypes(s: Session): Promise<ApiResource[]> {
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
  return served.filter((r) => bound.has(`${r.group}/${r.name}`) && !r.group.endsWith(".kcp.io"));
}

/** A listed object as the planner sees it; undefined for something that is no object. */
export function toPlanObject(r: ApiResource, item: unknown, named: ReadonlySet<string>): PlanObject | undefined {
  const meta = isRecord(item) && isRecord(item["metadata"]) ? item["metadata"] : undefined;
  if (!meta || typeof meta["name"] !== "string") return undefined;
  const namespace = r.namespaced && typeof meta["namespace"] === "string" ? meta["namespace"] : undefined;
  const id = objectId(r.group, r.name, namespace, meta["name"]);
  const annotations = isRecord(meta["annotations"]) ? meta["annotations"] : {};
  const finalizers = Array.isArray(meta["finalizers"]) ? meta["finalizers"].map(String) : [];
  return {
    id,
    group: r.group,
    version: r.version,
    resource: r.name,
    kind: r.kind,
    ...(namespace !== undefined ? { namespace } : {}),
    name: meta["name"],
    ...(typeof meta["uid"] === "string" ? { uid: meta["uid"] } : {}),
    finalizers,
    deleting: typeof meta["deletionTimestamp"] === "string",
    skipProtection: annotations[SKIP_PROTECTION_ANNOTATION] === "true" || named.has(id),
  };
}

const objectPath = (o: PlanObject): string =>
  `${collectionPath({ group: o.group, version: o.version, name: o.resource }, o.namespace)}/${encodeURIComponent(o.name)}`;

/** A DELETE's answer: allowed, gone, or refused with the Status read back into blockers. */
async function deleteAnswer(send: () => Promise<unknown>): Promise<DeleteAnswer> {
  try {
    await send();
    return { outcome: "allowed" };
  } catch (err) {
    if (!isApiError(err)) throw err;
    // 409 with no webhook in it is the uid precondition: the object we planned for is gone.
    const refusal = parseRefusal(err.apiStatus ?? { code: err.status, message: err.statusMessage });
    if (err.status === 404 || (err.status === 409 && refusal.webhook === undefined)) return { outcome: "gone" };
    return { outcome: "refused", status: err.status, refusal };
  }
}

/**
 * The kcp adapter. `named` are the ids the user allowed skip-protection for; `types` the bound types, found once
 * (a type bound during the teardown is not taken down).
 */
export function kcpTeardownApi(s: Session, scope: Scope, types: readonly ApiResource[], named: ReadonlySet<string>) {
  const inScope = types.filter((t) => "workspace" in scope || t.namespaced);
  const api: TeardownApi = {
    async list() {
      const out: PlanObject[] = [];
      for (const r of inScope) {
        const path = collectionPath(r, "namespace" in scope ? scope.namespace : undefined);
        let items: unknown[];
        try {
          items = (await s.ws.listAll<unknown>(path)).items;
        } catch (err) {
          if (isApiError(err, 404)) continue; // unbound meanwhile: nothing of it left to take down
          throw explain(err, `list ${r.name}.${r.group} in ${s.workspace}`);
        }
        for (const item of items) {
          const o = toPlanObject(r, item, named);
          if (o) out.push(o);
        }
      }
      return out;
    },
    dryRun: (o) => deleteAnswer(() => s.ws.request("DELETE", objectPath(o), { query: { dryRun: "All" } })),
    delete: (o) =>
      deleteAnswer(() =>
        s.ws.request("DELETE", objectPath(o), {
          body: {
            apiVersion: "v1",
            kind: "DeleteOptions",
            propagationPolicy: "Background",
            ...(o.uid ? { preconditions: { uid: o.uid } } : {}),
          },
        }),
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
    async skipProtection(o) {
      const body = { metadata: { annotations: { [SKIP_PROTECTION_ANNOTATION]: "true" } } };
      try {
        await s.ws.request("PATCH", objectPath(o), { body, contentType: "application/merge-patch+json" });
      } catch (err) {
        if (isApiError(err, 404)) return;
        throw explain(err, `annotate ${o.resource}/${o.name} with ${SKIP_PROTECTION_ANNOTATION}`);
      }
    },
  };
  return api;
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
    ids.add(objectId(t.group, t.name, t.namespaced ? ns : undefined, name));
  }
  return ids;
}
