// Turns a kubeconfig into kcp connection facts: the server's base URL (without `/clusters/…`), the workspace the
// kubeconfig points at, and credentials usable against any base (workspace, shard or virtual workspace).
import { ConfigError, readKubeconfig } from "./kubeconfig-file.ts";
import { RestClient, type Credentials } from "./rest.ts";

export { ConfigError };

export interface KcpConnection {
  /** e.g. https://127.0.0.1:6443 — no `/clusters/` suffix. */
  baseUrl: string;
  /** The `/clusters/<x>` segment of the kubeconfig's server: a workspace path or logical cluster name. */
  workspace: string;
  /** Client rooted at `baseUrl`; use `.forCluster()` or `.withBase()` to aim it. */
  base: RestClient;
  /** Client rooted at `<baseUrl>/clusters/<workspace>`. */
  workspaceClient: RestClient;
  /** The context's namespace, if it names one. */
  namespace?: string;
  credentials: Credentials;
}

export interface LoadOptions {
  /** Path to a kubeconfig; falls back to $KUBECONFIG, then ~/.kube/config (kubectl's rules). */
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** Whether the server URL must name a workspace (`/clusters/<path>`). */
  requireWorkspace?: boolean;
}

/** Splits `https://host:port/clusters/root:dep-ctrl` into base and workspace; workspace is "" when absent. */
export function splitServerUrl(server: string): { baseUrl: string; workspace: string } {
  const u = new URL(server);
  const m = /^(.*?)\/clusters\/([^/]+)\/?$/.exec(u.pathname);
  if (!m) return { baseUrl: `${u.origin}${u.pathname.replace(/\/+$/, "")}`, workspace: "" };
  return { baseUrl: `${u.origin}${m[1] ?? ""}`, workspace: decodeURIComponent(m[2] ?? "") };
}

export function loadKcpConnection(opts: LoadOptions = {}): KcpConnection {
  const kc = readKubeconfig({ kubeconfig: opts.kubeconfig, context: opts.context });
  const { baseUrl, workspace } = splitServerUrl(kc.server);
  if (opts.requireWorkspace && workspace === "") {
    throw new ConfigError(
      `kubeconfig server ${kc.server} names no kcp workspace: it must end in /clusters/<workspace path>, ` +
        `e.g. https://kcp.example:6443/clusters/root:dep-ctrl`,
    );
  }
  const base = new RestClient(baseUrl, kc.credentials);
  return {
    baseUrl,
    workspace,
    base,
    workspaceClient: workspace ? base.forCluster(workspace) : base,
    ...(kc.namespace ? { namespace: kc.namespace } : {}),
    credentials: kc.credentials,
  };
}
