// Turns a kubeconfig into kcp connection facts: the server's base URL (without `/clusters/…`), the workspace the
// kubeconfig points at, and credentials usable against any base (workspace, shard or virtual workspace).
import { ConfigError, readKubeconfig, type KubeconfigContext } from "./kubeconfig-file.ts";
import { RestClient, type Credentials } from "./rest.ts";

export { ConfigError };

/** A connection to kcp that would send the binary's credentials in clear or to a server it does not verify. */
export class InsecureKcpError extends ConfigError {
  override name = "InsecureKcpError";
}

/** The flag that lets a binary talk to kcp anyway (development only). */
export const ALLOW_INSECURE_FLAG = "--allow-insecure-kcp";

/**
 * Why this kubeconfig context would send its credentials unprotected (plain HTTP, or TLS without verifying the
 * server), or undefined when it would not. The binaries' token or client certificate opens every provider's export.
 */
export function insecureTransport(kc: Pick<KubeconfigContext, "server" | "credentials">): string | undefined {
  if (!/^https:\/\//i.test(kc.server)) return `kubeconfig server ${kc.server} is not https`;
  if (kc.credentials.insecureSkipTLSVerify === true)
    return `kubeconfig cluster of ${kc.server} sets insecure-skip-tls-verify`;
  return undefined;
}

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
  /** Refuse plain HTTP and insecure-skip-tls-verify (InsecureKcpError): the binaries, unless --allow-insecure-kcp. */
  requireSecure?: boolean;
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
  const insecure = opts.requireSecure ? insecureTransport(kc) : undefined;
  if (insecure !== undefined)
    throw new InsecureKcpError(
      `${insecure}: refusing to send credentials that way (${ALLOW_INSECURE_FLAG} for development only)`,
    );
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
