// The plugin's session with kcp: the user's own kubeconfig and credentials, opened once per command and closed after
// it, discovery, the objects of one workspace, and DELETEs (dry runs and real ones) read into one answer. Every kcp
// answer the user may not see becomes a sentence, never a stack trace.
import { WORKSPACE_PATH_RE } from "../api/wire.ts";
import { loadKcpConnection } from "../kcp/kubeconfig.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import { answerOf, type DeleteAnswer } from "./causes.ts";
import { apiPrefix, resourcesOf, splitQuery, type ApiResource } from "./discovery.ts";

/** A failure the user can act on; exit code 2 unless said otherwise. */
export class PluginError extends Error {
  override name = "PluginError";
}

/** Where to connect and which workspace to act in; each defaults to the kubeconfig's. */
export interface Connection {
  kubeconfig?: string;
  context?: string;
  /** The workspace the command acts in (`root:consumer1`); default: the kubeconfig server's `/clusters/<x>`. */
  workspace?: string;
}

export interface Session {
  base: RestClient;
  /** The workspace the command acts in, and a client rooted there. */
  workspace: string;
  ws: RestClient;
  /** The context's namespace, else "default". */
  namespace: string;
}

export function openSession(conn: Connection): Session {
  let kcp;
  try {
    kcp = loadKcpConnection({ kubeconfig: conn.kubeconfig, context: conn.context });
  } catch (err) {
    throw new PluginError((err as Error).message);
  }
  const workspace = conn.workspace ?? kcp.workspace;
  if (workspace === "")
    throw new PluginError(
      "the kubeconfig's server names no kcp workspace (…/clusters/<path>): pass --workspace <path>, e.g. root:consumer1",
    );
  if (!WORKSPACE_PATH_RE.test(workspace) && !/^[a-z0-9]+$/.test(workspace))
    throw new PluginError(`--workspace ${workspace}: not a workspace path like root:org:team`);
  const namespace = kcp.namespace ?? "default";
  return {
    base: kcp.base,
    workspace,
    ws: kcp.base.forCluster(workspace),
    namespace,
  };
}

/** Runs `fn` in a session opened for `conn`, closed after it however it ends. */
export async function withSession<T>(conn: Connection, fn: (s: Session) => Promise<T>): Promise<T> {
  const s = openSession(conn);
  try {
    return await fn(s);
  } finally {
    s.base.close();
  }
}

/** An API error or a network failure, said in the user's terms: `what` reads "list vpcs in root:consumer1". */
export function explain(err: unknown, what: string): PluginError {
  if (err instanceof PluginError) return err;
  if (isApiError(err, 403))
    return new PluginError(
      `you may not ${what} (403 Forbidden; kcp also answers so for a workspace that does not exist)`,
    );
  if (isApiError(err, 401)) return new PluginError(`kcp does not accept your credentials (401): cannot ${what}`);
  if (isApiError(err, 404)) return new PluginError(`cannot ${what}: not found (404)`);
  if (isApiError(err)) return new PluginError(`cannot ${what}: ${err.status} ${err.reason}: ${err.message}`);
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ECONNREFUSED" || e?.code === "ENOTFOUND" || e?.code === "EHOSTUNREACH")
    return new PluginError(`cannot reach kcp (${e.code}): cannot ${what}`);
  return new PluginError(`cannot ${what}: ${(err as Error)?.message ?? String(err)}`);
}

/** The resources a workspace serves, in the group the query names or in all groups (preferred versions). */
export async function discover(s: Session, query: string): Promise<ApiResource[]> {
  const { group } = splitQuery(query);
  const where = `read the API discovery of ${s.workspace}`;
  let groups: { name: string; version: string }[];
  try {
    const list = await s.ws.get<{ groups?: { name: string; preferredVersion?: { version: string } }[] }>("/apis");
    groups = (list.groups ?? [])
      .filter((g) => group === undefined || g.name === group)
      .map((g) => ({ name: g.name, version: g.preferredVersion?.version ?? "" }))
      .filter((g) => g.version !== "");
  } catch (err) {
    throw explain(err, where);
  }
  // The core group is served at /api/v1, not listed in /apis: asked for by no group, or by "" (a local target's type).
  if (group === undefined || group === "") groups.unshift({ name: "", version: "v1" });
  const lists = await Promise.all(
    groups.map(async (g) => {
      try {
        return resourcesOf(g.name, g.version, await s.ws.get(apiPrefix(g.name, g.version)));
      } catch (err) {
        if (isApiError(err, 404) || isApiError(err, 503)) return []; // a group going away or not ready: skip it
        throw explain(err, where);
      }
    }),
  );
  return lists.flat();
}

/** The resource of one group/resource in a workspace, or undefined when the workspace does not serve it. */
export async function resourceFor(s: Session, group: string, resource: string): Promise<ApiResource | undefined> {
  const found = await discover(s, `${resource}.${group}`);
  return found.find((r) => r.name === resource);
}

/**
 * A DELETE's answer. `send` throws kcp's refusal, which is an answer, not an error. With `conflictMeansGone` (teardown,
 * whose deletes carry the object's uid as precondition), a 409 that no webhook sent is that precondition failing: the
 * object planned for is gone, and a new one may have its name.
 */
export async function deleteAnswer(send: () => Promise<unknown>, conflictMeansGone = false): Promise<DeleteAnswer> {
  try {
    await send();
    return { outcome: "allowed" };
  } catch (err) {
    if (!isApiError(err)) throw err;
    const answer = answerOf(err.status, err.apiStatus ?? err.statusMessage);
    if (conflictMeansGone && answer.outcome === "refused" && err.status === 409 && answer.refusal.webhook === undefined)
      return { outcome: "gone" };
    return answer;
  }
}

/**
 * A server-side dry-run DELETE of `path` in the session's workspace: kcp runs the admission webhooks as for a real
 * delete and changes nothing. A refusal carries the webhook's blockers (`status.details.causes`).
 */
export const dryRunDelete = (s: Session, path: string): Promise<DeleteAnswer> =>
  deleteAnswer(() => s.ws.request("DELETE", path, { query: { dryRun: "All" } }));

/** All objects of one type in the session's workspace, across namespaces; undefined when the type is not served. */
export async function listObjects(
  s: Session,
  r: { group: string; version: string; name: string },
): Promise<unknown[] | undefined> {
  try {
    return (await s.ws.listAll<unknown>(`${apiPrefix(r.group, r.version)}/${r.name}`)).items;
  } catch (err) {
    if (isApiError(err, 404)) return undefined;
    throw explain(err, `list ${r.name}.${r.group} in ${s.workspace}`);
  }
}
