// Which handler a request's path asks for: /validate/<provider logical cluster> (the URL the controller writes into
// each provider's VWC), /validate-rules (DependencyRule CREATE/UPDATE), or, only when enabled, the legacy /validate.
import type { LogicalClusterName } from "../../api/types.ts";
import { parseLogicalClusterName, VALIDATE_ROUTE, VALIDATE_RULES_ROUTE } from "../../api/wire.ts";

const PROVIDER_ROUTE = new RegExp(`^${VALIDATE_ROUTE}/([^/]+)/?$`);

export type Route =
  { ok: true; provider: LogicalClusterName | undefined; rules?: true } | { ok: false; code: number; message: string };

export interface RouteOptions {
  /**
   * Serve the Go original's `/validate` without a provider segment, which matches the rules of every provider for
   * the deleted group/resource. Default false: such a request gets 404 with LEGACY_ROUTE_DISABLED.
   */
  legacyValidateRoute?: boolean;
}

/** Why `/validate` without a provider is refused when the legacy route is off. */
export const LEGACY_ROUTE_DISABLED =
  "the legacy route /validate (no provider logical cluster) is disabled: it would match the rules of every " +
  "provider; point the ValidatingWebhookConfiguration at /validate/<provider logical cluster>, the URL the " +
  "controller writes";

/** `/validate/<logical cluster>`, `/validate-rules` or (when enabled) `/validate`; anything else is not ours. */
export function route(url: string, opts: RouteOptions = {}): Route {
  const path = url.split("?")[0] ?? "";
  if (path === VALIDATE_RULES_ROUTE) return { ok: true, provider: undefined, rules: true };
  if (path === VALIDATE_ROUTE || path === `${VALIDATE_ROUTE}/`) {
    if (opts.legacyValidateRoute) return { ok: true, provider: undefined };
    return { ok: false, code: 404, message: LEGACY_ROUTE_DISABLED };
  }
  const m = PROVIDER_ROUTE.exec(path);
  if (!m) return { ok: false, code: 404, message: `no handler for ${path}: use /validate/<provider logical cluster>` };
  let cluster: string;
  try {
    cluster = decodeURIComponent(m[1] ?? "");
  } catch {
    cluster = m[1] ?? "";
  }
  const provider = parseLogicalClusterName(cluster);
  if (provider === undefined) {
    return { ok: false, code: 400, message: `${JSON.stringify(cluster)} in the URL is not a logical cluster name` };
  }
  return { ok: true, provider };
}
