// Test helpers that talk to a running kcp: workspaces at any depth, applying YAML, waiting for bindings.
// They take a RestClient rooted at the kcp base URL (a single shard or the front-proxy).
import { writeFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { isApiError, type RestClient } from "../../src/kcp/rest.ts";
import { waitFor } from "./process.ts";

export interface KObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

interface Workspace {
  spec?: { cluster?: string };
  status?: { phase?: string };
}

export interface CreateWorkspaceOptions {
  /** Pin to a shard by name (`root`, `shard-1`) in a sharded setup. */
  shard?: string;
  /** WorkspaceType name; kcp's default applies when unset. */
  type?: string;
  timeoutMs?: number;
}

/** Creates `path` (e.g. `root:org:team`), its missing parents too, waits for Ready; returns its logical cluster. */
export async function createWorkspace(
  base: RestClient,
  path: string,
  opts: CreateWorkspaceOptions = {},
): Promise<LogicalClusterName> {
  const segments = path.split(":");
  if (segments[0] !== "root" || segments.length < 2) throw new Error(`workspace path must be below root: ${path}`);
  let cluster = "";
  for (let i = 1; i < segments.length; i++) {
    const parent = segments.slice(0, i).join(":");
    const name = segments[i] ?? "";
    const isLeaf = i === segments.length - 1;
    const wsPath = `/clusters/${parent}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
    const spec: Record<string, unknown> = {};
    if (isLeaf && opts.shard) spec["location"] = { selector: { matchLabels: { name: opts.shard } } };
    if (isLeaf && opts.type) spec["type"] = { name: opts.type, path: "root" };
    try {
      await base.request("POST", wsPath, {
        body: { apiVersion: "tenancy.kcp.io/v1alpha1", kind: "Workspace", metadata: { name }, spec },
      });
    } catch (err) {
      if (!isApiError(err, 409)) throw err;
    }
    cluster = await waitFor(
      `workspace ${segments.slice(0, i + 1).join(":")} Ready`,
      async () => {
        const ws = await base.get<Workspace>(`${wsPath}/${name}`);
        return ws.status?.phase === "Ready" && ws.spec?.cluster ? ws.spec.cluster : undefined;
      },
      { timeoutMs: opts.timeoutMs ?? 90_000, intervalMs: 300 },
    );
  }
  return cluster as LogicalClusterName;
}

export async function deleteWorkspace(base: RestClient, path: string): Promise<void> {
  const segments = path.split(":");
  const parent = segments.slice(0, -1).join(":");
  await base.request("DELETE", `/clusters/${parent}/apis/tenancy.kcp.io/v1alpha1/workspaces/${segments.at(-1)}`);
}

/** The logical cluster name behind a workspace path, read from the workspace's LogicalCluster object. */
export async function logicalClusterOf(base: RestClient, path: string): Promise<LogicalClusterName> {
  const lc = await base.get<{ metadata: { annotations?: Record<string, string> } }>(
    `/clusters/${path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`,
  );
  const name = lc.metadata.annotations?.["kcp.io/cluster"];
  if (!name) throw new Error(`LogicalCluster of ${path} has no kcp.io/cluster annotation`);
  return name as LogicalClusterName;
}

export function parseYaml(text: string, vars: Record<string, string> = {}): KObject[] {
  const substituted = text.replace(/\$\{([A-Z0-9_]+)\}/g, (m, name: string) => vars[name] ?? m);
  return parseAllDocuments(substituted)
    .map((d) => d.toJS() as KObject | null)
    .filter((o): o is KObject => o !== null && typeof o === "object");
}

const resourceCache = new Map<string, { name: string; namespaced: boolean }>();

/** Finds the REST path of an object's collection through discovery in the workspace. */
export async function collectionPath(ws: RestClient, obj: KObject): Promise<string> {
  const key = `${ws.baseUrl}|${obj.apiVersion}|${obj.kind}`;
  let res = resourceCache.get(key);
  if (!res) {
    const prefix = obj.apiVersion.includes("/") ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
    const found = await waitFor(
      `discovery of ${obj.kind} (${obj.apiVersion})`,
      async () => {
        const list = await ws.get<{ resources: { name: string; kind: string; namespaced: boolean }[] }>(prefix);
        return list.resources.find((r) => r.kind === obj.kind && !r.name.includes("/"));
      },
      { timeoutMs: 30_000 },
    );
    res = { name: `${prefix}/${found.name}`, namespaced: found.namespaced };
    resourceCache.set(key, res);
  }
  if (!res.namespaced) return res.name;
  const ns = obj.metadata.namespace ?? "default";
  return res.name.replace(/\/([^/]+)$/, `/namespaces/${ns}/$1`);
}

/** Server-side applies every object into the workspace the client is rooted at. */
export async function apply(ws: RestClient, objects: KObject[] | string, vars?: Record<string, string>): Promise<void> {
  const list = typeof objects === "string" ? parseYaml(objects, vars) : objects;
  for (const obj of list) {
    const path = `${await collectionPath(ws, obj)}/${obj.metadata.name}`;
    const patch = (): Promise<unknown> =>
      ws.request("PATCH", path, {
        body: obj,
        contentType: "application/apply-patch+yaml",
        query: { fieldManager: "kcp-dependency-controller-tests", force: true },
      });
    if (obj.kind === "APIBinding") await bindEventually(obj.metadata.name, patch);
    else await patch();
  }
}

/**
 * Creates an APIBinding, retrying kcp's bind check while it is not yet able to see the export. On a sharded kcp the
 * check for `bind` on an export in another shard's workspace reads RBAC and logical clusters replicated through the
 * cache server, so a binding made right after the export's workspace was set up can be refused with 403 "no
 * permission to bind" for a moment (seen in CI). Any other error, or the same one after 30 s, is thrown.
 */
async function bindEventually(name: string, patch: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await patch();
      return;
    } catch (err) {
      const notYet = isApiError(err, 403) && /no permission to bind/.test(err.message);
      if (!notYet || Date.now() > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

interface APIBinding {
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

/** An APIBinding of the export `name` in workspace `path`, named after the export (no permission claims). */
export const apiBinding = (name: string, path: string): KObject => ({
  apiVersion: "apis.kcp.io/v1alpha2",
  kind: "APIBinding",
  metadata: { name },
  spec: { reference: { export: { path, name } } },
});

/** Waits until an APIBinding in the workspace is Bound with its claims applied. */
export async function waitForBinding(ws: RestClient, name: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `APIBinding ${name} Bound`,
    async () => {
      const b = await ws.get<APIBinding>(`/apis/apis.kcp.io/v1alpha2/apibindings/${name}`);
      const ready = b.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      return b.status?.phase === "Bound" && ready;
    },
    { timeoutMs },
  );
}

/** Writes a kubeconfig for `server` with a bearer token (or the admin kubeconfig's client cert) and returns its path. */
export function writeKubeconfig(
  file: string,
  server: string,
  caPem: string | Buffer,
  user: { token: string } | { certPem: string | Buffer; keyPem: string | Buffer },
): string {
  const b64 = (v: string | Buffer): string => Buffer.from(v).toString("base64");
  const userEntry =
    "token" in user
      ? `    token: ${user.token}`
      : `    client-certificate-data: ${b64(user.certPem)}\n    client-key-data: ${b64(user.keyPem)}`;
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: ${server}
    certificate-authority-data: ${b64(caPem)}
users:
- name: user
  user:
${userEntry}
contexts:
- name: kcp
  context:
    cluster: kcp
    user: user
current-context: kcp
`,
    { mode: 0o600 },
  );
  return file;
}
