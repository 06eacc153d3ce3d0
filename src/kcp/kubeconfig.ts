// Turns a kubeconfig into kcp connection facts: the server's base URL (without `/clusters/…`), the workspace the
// kubeconfig points at, and credentials usable against any base (workspace, shard or virtual workspace).
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import type https from "node:https";
import { RestClient, type Credentials } from "./rest.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
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
}

export interface LoadOptions {
  /** Path to a kubeconfig; falls back to $KUBECONFIG, then ~/.kube/config (client-node's default rules). */
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
  const kc = new KubeConfig();
  const file = opts.kubeconfig;
  try {
    if (file) {
      readFileSync(file); // a clear error for a missing file instead of client-node's generic one
      kc.loadFromFile(file);
    } else {
      kc.loadFromDefault();
    }
  } catch (err) {
    throw new ConfigError(`cannot load kubeconfig ${file ?? "(default)"}: ${(err as Error).message}`);
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) throw new ConfigError(`kubeconfig has no context "${opts.context}"`);
    kc.setCurrentContext(opts.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ConfigError(`kubeconfig ${file ?? "(default)"} has no current cluster`);
  const { baseUrl, workspace } = splitServerUrl(cluster.server);
  if (opts.requireWorkspace && workspace === "") {
    throw new ConfigError(
      `kubeconfig server ${cluster.server} names no kcp workspace: it must end in /clusters/<workspace path>, ` +
        `e.g. https://kcp.example:6443/clusters/root:dep-ctrl`,
    );
  }
  const base = new RestClient(baseUrl, credentialsFrom(kc));
  return { baseUrl, workspace, base, workspaceClient: workspace ? base.forCluster(workspace) : base };
}

/** Credentials from a loaded KubeConfig: TLS material once, auth headers per request (tokens may rotate). */
export function credentialsFrom(kc: KubeConfig): Credentials {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  const read = (data?: string, path?: string): Buffer | undefined =>
    data ? Buffer.from(data, "base64") : path ? readFileSync(path) : undefined;
  const ca = read(cluster?.caData, cluster?.caFile);
  const cert = read(user?.certData, user?.certFile);
  const key = read(user?.keyData, user?.keyFile);
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    insecureSkipTLSVerify: cluster?.skipTLSVerify === true,
    headers: async () => {
      const opts: https.RequestOptions = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === "string") headers[k] = v;
      return headers;
    },
  };
}
