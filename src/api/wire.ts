// What the controller, the webhook and the plugin must agree on byte for byte: the collection paths they read and
// write, the routes the controller writes into webhook configurations and the webhook serves, and the formats of the
// two kinds of workspace names. Kept in one place so the writer and the reader of a path cannot drift apart; the
// branded name types are made only here, after the check.
import { GROUP, PLURAL, VERSION, type LogicalClusterName, type WorkspacePath } from "./types.ts";

/** The DependencyRule collection, below a workspace (`/clusters/<name>`) or a virtual workspace endpoint. */
export const DEPENDENCY_RULES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
/** The ValidatingWebhookConfiguration collection, below a workspace or a virtual workspace endpoint. */
export const WEBHOOK_CONFIGURATIONS_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/** The webhook's route for DependencyRule CREATE and UPDATE reviews. */
export const VALIDATE_RULES_ROUTE = "/validate-rules";
/** The webhook's route for DELETE reviews; the provider's logical cluster follows as one more segment. */
export const VALIDATE_ROUTE = "/validate";

/** The deletion route of one provider workspace. */
export function validateRouteOf(provider: LogicalClusterName): string {
  return `${VALIDATE_ROUTE}/${provider}`;
}

/** Logical cluster names are lowercase alphanumerics (and `system:` names); they go into URL paths. */
export const LOGICAL_CLUSTER_NAME_PATTERN = /^[a-z0-9]([a-z0-9:-]*[a-z0-9])?$/;
/** root, root:org-1:team-2, not "root:", "::", upper case or "_"; a string because the CRD schema holds it too. */
export const WORKSPACE_PATH_PATTERN = "^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)*$";
export const WORKSPACE_PATH_RE = new RegExp(WORKSPACE_PATH_PATTERN);

/**
 * Most segments (root included) a rule's `apiExportRef.path` may have. Resolving a path may read one Workspace per
 * segment, so the cap bounds what one rule costs kcp; kcp itself sets no depth limit, and its deepest documented tree
 * (home workspaces, root:users:a8:f1:adam) has 5 segments.
 */
export const MAX_PROVIDER_PATH_SEGMENTS = 10;
/** WORKSPACE_PATH_PATTERN with at most MAX_PROVIDER_PATH_SEGMENTS segments (bounded repetition: RE2 and JS agree). */
export const PROVIDER_PATH_PATTERN = `^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*){0,${MAX_PROVIDER_PATH_SEGMENTS - 1}}$`;

export function isLogicalClusterName(s: unknown): s is LogicalClusterName {
  return typeof s === "string" && LOGICAL_CLUSTER_NAME_PATTERN.test(s);
}

export function isWorkspacePath(s: unknown): s is WorkspacePath {
  return typeof s === "string" && WORKSPACE_PATH_RE.test(s);
}

/** The name, checked; undefined when it is not one. */
export function parseLogicalClusterName(s: unknown): LogicalClusterName | undefined {
  return isLogicalClusterName(s) ? s : undefined;
}

/** The path, checked; undefined when it is not one. */
export function parseWorkspacePath(s: unknown): WorkspacePath | undefined {
  return isWorkspacePath(s) ? s : undefined;
}

/** For names that must be valid (constants, checked input); throws a TypeError naming the value otherwise. */
export function logicalClusterName(s: string): LogicalClusterName {
  if (!isLogicalClusterName(s)) throw new TypeError(`${JSON.stringify(s)} is not a logical cluster name`);
  return s;
}

/** For paths that must be valid (constants, checked input); throws a TypeError naming the value otherwise. */
export function workspacePath(s: string): WorkspacePath {
  if (!isWorkspacePath(s)) throw new TypeError(`${JSON.stringify(s)} is not a workspace path`);
  return s;
}
