// A tenant's own credential, as a real provider or consumer holds one: a ServiceAccount in its workspace, bound to
// cluster-admin there, and a token for it from the TokenRequest API. kcp scopes such a token to the workspace's
// logical cluster (`authentication.kcp.io/scopes: cluster:<it>`, kcp.md §9), so a test that plays a tenant acts with
// exactly what the tenant can do in its own workspace, and none of kcp-admin's reach (team rule: never kcp-admin).
import { readFileSync } from "node:fs";
import path from "node:path";
import { isApiError, RestClient } from "../../src/kcp/rest.ts";
import { apply, type KObject } from "./api.ts";
import { REPO_ROOT } from "./harness.ts";
import { IDENTITIES, type KcpEnv } from "./layout.ts";
import { waitFor } from "./process.ts";

/** A tenant identity in one workspace: its raw bearer token and a client rooted at `<base>/clusters/<workspace>`. */
export interface Tenant {
  /** The workspace path it was made in (the only one its token works in). */
  readonly workspace: string;
  /** `system:serviceaccount:default:<name>`. */
  readonly user: string;
  readonly token: string;
  /** The tenant's client at its workspace; request paths are relative to it (`/apis/...`). */
  readonly client: RestClient;
}

export interface TenantOptions {
  /** The ServiceAccount's name in the workspace's `default` namespace. */
  name?: string;
  /** The ClusterRole it is bound to in its workspace; cluster-admin plays the workspace's owner. */
  clusterRole?: string;
  /** Lifetime asked of TokenRequest; long enough for the longest suite. */
  expirationSeconds?: number;
}

/** Creates `obj` at `path`; an existing one (409) is fine, so a test may ask for the same tenant twice. */
async function ensure(ws: RestClient, path: string, obj: Record<string, unknown>): Promise<void> {
  try {
    await ws.request("POST", path, { body: obj });
  } catch (err) {
    if (!isApiError(err, 409)) throw err;
  }
}

/**
 * Makes the ServiceAccount `name` in `workspacePath` (as kcp-admin: the workspace's owner sets its tenant up), binds
 * it to `clusterRole` there, and asks the TokenRequest API for its token
 * (`POST /api/v1/namespaces/default/serviceaccounts/<name>/token`).
 */
export async function tenant(env: KcpEnv, workspacePath: string, opts: TenantOptions = {}): Promise<Tenant> {
  const name = opts.name ?? "tenant";
  const clusterRole = opts.clusterRole ?? "cluster-admin";
  const admin = env.ws(workspacePath);
  // kcp creates the default namespace shortly after the workspace is Ready; the ServiceAccount needs it.
  await waitFor(
    `namespace default in ${workspacePath}`,
    async () => (await admin.getOptional("/api/v1/namespaces/default")) !== undefined || undefined,
    { timeoutMs: 60_000, intervalMs: 300 },
  );
  await ensure(admin, "/api/v1/namespaces/default/serviceaccounts", {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name, namespace: "default" },
  });
  const user = `system:serviceaccount:default:${name}`;
  await ensure(admin, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `tenant-${name}-${clusterRole}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
    subjects: [{ kind: "ServiceAccount", name, namespace: "default" }],
  });
  const answer = await admin.request<{ status?: { token?: string } }>(
    "POST",
    `/api/v1/namespaces/default/serviceaccounts/${name}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: opts.expirationSeconds ?? 24 * 3600 },
      },
    },
  );
  const token = answer.status?.token;
  if (!token) throw new Error(`TokenRequest for ${user} in ${workspacePath} answered no token`);
  const client = new RestClient(`${env.baseUrl}/clusters/${workspacePath}`, {
    ca: env.caPem,
    headers: () => Promise.resolve({ authorization: `Bearer ${token}` }),
  });
  return { workspace: workspacePath, user, token, client };
}

/** The tenant's client at its workspace (see `tenant`); `tenant(...).token` when the raw token is needed too. */
export async function tenantClient(env: KcpEnv, workspacePath: string, name?: string): Promise<RestClient> {
  return (await tenant(env, workspacePath, name ? { name } : {})).client;
}

/** A provider's grant that lets any authenticated user bind its export, as a provider open to all consumers has. */
export function bindGrant(exportName: string): KObject[] {
  const name = `bind-${exportName}`;
  const rbac = "rbac.authorization.k8s.io";
  return [
    {
      apiVersion: `${rbac}/v1`,
      kind: "ClusterRole",
      metadata: { name },
      rules: [{ apiGroups: ["apis.kcp.io"], resources: ["apiexports"], resourceNames: [exportName], verbs: ["bind"] }],
    },
    {
      apiVersion: `${rbac}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: rbac, kind: "ClusterRole", name },
      subjects: [{ apiGroup: rbac, kind: "Group", name: "system:authenticated" }],
    },
  ];
}

/**
 * A provider's consent to the dependents index (deploy/rbac/provider-index.yaml) for its export `exportName`, given
 * with the provider's own client (its tenant's token), as getting-started's step 4 has the provider run it.
 */
export async function consentToIndex(
  provider: RestClient,
  exportName: string,
  webhookUser: string = IDENTITIES.webhook.user,
): Promise<void> {
  const consent = readFileSync(path.join(REPO_ROOT, "deploy/rbac/provider-index.yaml"), "utf8");
  await apply(provider, consent, { WEBHOOK_USER: webhookUser, DEPENDENT_EXPORT: exportName });
}
