// How the binaries may reach kcp, as flags: --allow-insecure-kcp (both; development only) and
// --virtual-workspace-origins (the webhook: the shard origins its dependents index may follow, endpoint-origins.ts).
import { parseOrigin } from "../kcp/endpoint-origins.ts";
import { ALLOW_INSECURE_FLAG } from "../kcp/kubeconfig.ts";
import { parse, UsageError, type Flag, type FlagValues } from "../cli/kit.ts";

const ALLOW_INSECURE = ALLOW_INSECURE_FLAG.slice(2);

export const ALLOW_INSECURE_KCP: Flag = {
  name: ALLOW_INSECURE,
  env: "ALLOW_INSECURE_KCP",
  arg: "true|false",
  default: "false",
  help: "development only: talk to kcp over plain http or without verifying its certificate (insecure-skip-tls-verify), which the binary otherwise refuses to start with",
};

export const VIRTUAL_WORKSPACE_ORIGINS: Flag = {
  name: "virtual-workspace-origins",
  env: "VIRTUAL_WORKSPACE_ORIGINS",
  arg: "LIST",
  help: "comma-separated https://host:port origins of shard virtual workspaces the dependents index may follow, besides those of the dep-ctrl export's own endpoints (needed for a shard no dep-ctrl binding lives on)",
};

/** `{ allowInsecureKcp: true }` only when the operator asks for it. */
export function parseAllowInsecureKcp(v: FlagValues): { allowInsecureKcp?: true } {
  return parse.bool(v[ALLOW_INSECURE]!, ALLOW_INSECURE) ? { allowInsecureKcp: true } : {};
}

/** A plain-http URL other than the kubeconfig's (e.g. --kcp-base-url) is refused the same way as the kubeconfig's. */
export function requireHttps(url: string | undefined, flag: string, allowInsecure: boolean): void {
  if (url !== undefined && !allowInsecure && !/^https:\/\//i.test(url))
    throw new UsageError(
      `--${flag} ${JSON.stringify(url)} is not https (${ALLOW_INSECURE_FLAG}=true for development only)`,
    );
}

/** The configured origins, normalised; nothing when the flag is not set. */
export function parseVirtualWorkspaceOrigins(v: FlagValues): { virtualWorkspaceOrigins?: string[] } {
  const entries = (v[VIRTUAL_WORKSPACE_ORIGINS.name] ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
  if (entries.length === 0) return {};
  try {
    return { virtualWorkspaceOrigins: [...new Set(entries.map(parseOrigin))] };
  } catch (err) {
    throw new UsageError(`--${VIRTUAL_WORKSPACE_ORIGINS.name}: ${(err as Error).message}`);
  }
}
