// Which handler a request's path asks for: /validate/<provider logical cluster> (the URL the controller writes into
// each provider's VWC), /validate-rules (DependencyRule CREATE/UPDATE), or the legacy /validate (no provider).
import type { LogicalClusterName } from "../api/types.ts";

export const RULES_PATH = "/validate-rules";

const LOGICAL_CLUSTER_RE = /^[a-z0-9]([a-z0-9:-]*[a-z0-9])?$/;

export type Route =
  { ok: true; provider: LogicalClusterName | undefined; rules?: true } | { ok: false; code: number; message: string };

/** `/validate`, `/validate/<logical cluster>` or `/validate-rules`; anything else is not ours. */
export function route(url: string): Route {
  const path = url.split("?")[0] ?? "";
  if (path === RULES_PATH) return { ok: true, provider: undefined, rules: true };
  if (path === "/validate" || path === "/validate/") return { ok: true, provider: undefined };
  const m = /^\/validate\/([^/]+)\/?$/.exec(path);
  if (!m) return { ok: false, code: 404, message: `no handler for ${path}: use /validate/<provider logical cluster>` };
  let cluster: string;
  try {
    cluster = decodeURIComponent(m[1] ?? "");
  } catch {
    cluster = m[1] ?? "";
  }
  if (!LOGICAL_CLUSTER_RE.test(cluster)) {
    return { ok: false, code: 400, message: `${JSON.stringify(cluster)} in the URL is not a logical cluster name` };
  }
  return { ok: true, provider: cluster as LogicalClusterName };
}
