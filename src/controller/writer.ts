// The controller's writes through the dep-ctrl export's virtual workspace: webhook configurations in provider
// workspaces and rule statuses. In a sharded kcp each endpoint serves the logical clusters of its shard, so the
// writer remembers which endpoint served a cluster and tries the others when it does not know (a fact cache, dropped
// when a write there fails). Every write answers with an outcome; nothing here decides what to write.
import type { Logger } from "pino";
import { MANAGED_BY_LABEL, VWC_NAME, type LogicalClusterName } from "../api/types.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../api/wire.ts";
import { isApiError, type RequestOptions } from "../kcp/rest.ts";
import { isOurs, type Action } from "./actions.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";
import type { ControllerMetrics } from "./metrics.ts";
import type { ObservedRule } from "./plan.ts";
import type { RuleStatus } from "./status.ts";

/** What the writer needs of a REST client aimed at `<vw endpoint>/clusters/<cluster>`. */
export interface ClusterClient {
  request<T>(method: string, path: string, opts?: RequestOptions): Promise<T>;
}

/** ok; conflict (our view was stale: the next pass retries from fresh data); or failed, with the text for status. */
export type WriteOutcome = { kind: "ok" } | { kind: "conflict" } | { kind: "failed"; message: string };

const OK: WriteOutcome = { kind: "ok" };
const CONFLICT: WriteOutcome = { kind: "conflict" };

export interface WriterDeps {
  clientFor: (endpoint: string, cluster: LogicalClusterName) => ClusterClient;
  /** The virtual workspace endpoints (one per shard). */
  endpoints: () => string[];
  /** Called when a write to a cluster failed: the path → cluster cache may be stale (workspace recreated). */
  onWriteFailed: (cluster: LogicalClusterName) => void;
  exportName: string;
  logger: Logger;
  metrics: ControllerMetrics;
}

/** The message an install failure shows in rule status: short and stable (no resourceVersions or timestamps). */
function describeWriteError(err: unknown, exportName: string): string {
  if (isApiError(err)) {
    const hint =
      err.status === 403 || err.status === 404
        ? ` (the workspace must bind APIExport ${exportName} and accept its validatingwebhookconfigurations claim)`
        : "";
    return `${err.status} ${err.reason}${hint}`;
  }
  return (err as Error).message ?? String(err);
}

export class Writer {
  private readonly deps: WriterDeps;
  /** logical cluster → virtual workspace endpoint known to serve it. */
  private readonly endpointOf = new Map<LogicalClusterName, string>();

  constructor(deps: WriterDeps) {
    this.deps = deps;
  }

  /** Records that `endpoint` served an object of `cluster` (from a listing); a write there confirms it too. */
  learn(cluster: LogicalClusterName, endpoint: string, overwrite = false): void {
    if (overwrite || !this.endpointOf.has(cluster)) this.endpointOf.set(cluster, endpoint);
  }

  knows(cluster: LogicalClusterName): boolean {
    return this.endpointOf.has(cluster);
  }

  /** Endpoints to try for a cluster: the one known to serve it first, then the others. */
  candidates(cluster: LogicalClusterName): string[] {
    const all = [...this.deps.endpoints()].sort();
    const known = this.endpointOf.get(cluster);
    return known && all.includes(known) ? [known, ...all.filter((e) => e !== known)] : all;
  }

  async apply(action: Action, paths: readonly string[]): Promise<WriteOutcome> {
    const log = { workspace: paths.join(",") || undefined, cluster: action.cluster, action: action.kind };
    const endpoints = this.candidates(action.cluster);
    if (endpoints.length === 0)
      return { kind: "failed", message: "no virtual workspace endpoint for the dep-ctrl export" };
    let lastError: unknown;
    for (const endpoint of endpoints) {
      const client = this.deps.clientFor(endpoint, action.cluster);
      try {
        await send(client, action);
        this.endpointOf.set(action.cluster, endpoint);
        this.deps.metrics.writes.inc({ action: action.kind });
        this.deps.logger.info(
          { ...log, reason: action.reason },
          `${action.kind}d ValidatingWebhookConfiguration ${VWC_NAME}`,
        );
        return OK;
      } catch (err) {
        lastError = err;
        if (action.kind === "delete" && isApiError(err, 404)) return OK;
        if (isApiError(err, 409)) return this.onConflict(action, client, log);
        // 403/404 may just mean this shard's endpoint does not serve the cluster: try the next one.
        if (!(isApiError(err, 403) || isApiError(err, 404))) break;
        this.deps.logger.debug(
          { ...log, endpoint, status: err.status },
          "endpoint does not serve this workspace; trying the next",
        );
      }
    }
    this.endpointOf.delete(action.cluster);
    this.deps.onWriteFailed(action.cluster);
    this.deps.metrics.errors.inc({ reason: "write_webhook_configuration" });
    this.deps.logger.warn(
      { ...log, err: String(lastError) },
      `could not ${action.kind} ValidatingWebhookConfiguration`,
    );
    return { kind: "failed", message: describeWriteError(lastError, this.deps.exportName) };
  }

  /** 409: either our cache is stale (retry) or a configuration we do not own has our name (tell the user). */
  private async onConflict(action: Action, client: ClusterClient, log: Record<string, unknown>): Promise<WriteOutcome> {
    if (action.kind !== "create") return CONFLICT;
    const found = await client
      .request<ValidatingWebhookConfiguration>("GET", `${WEBHOOK_CONFIGURATIONS_PATH}/${action.object.metadata.name}`)
      .catch(() => undefined);
    if (!found || isOurs(found)) return CONFLICT;
    this.deps.metrics.errors.inc({ reason: "write_webhook_configuration" });
    this.deps.logger.warn(
      log,
      "a ValidatingWebhookConfiguration with our name but without our label exists; not touching it",
    );
    return {
      kind: "failed",
      message:
        `a ValidatingWebhookConfiguration named ${VWC_NAME} not managed by this controller exists there ` +
        `(no ${MANAGED_BY_LABEL} label); delete it, or label it to hand it over`,
    };
  }

  /** Writes one rule's status; a 404 or 409 (gone or changed since listed) is fine: the watch brings a new pass. */
  async writeStatus(rule: ObservedRule, status: RuleStatus, rulesPath: string): Promise<WriteOutcome> {
    const { cluster, name } = rule.parsed.key;
    const client = this.deps.clientFor(rule.endpoint, cluster);
    try {
      await client.request("PUT", `${rulesPath}/${name}/status`, { body: { ...rule.object, status } });
      this.deps.metrics.statusWrites.inc();
      return OK;
    } catch (err) {
      if (isApiError(err, 404) || isApiError(err, 409)) return CONFLICT;
      this.deps.metrics.errors.inc({ reason: "write_status" });
      this.deps.logger.warn({ rule: `${cluster}/${name}`, err: String(err) }, "could not write rule status");
      return { kind: "failed", message: String(err) };
    }
  }
}

/** The one way an Action reaches kcp (also for the local-target configurations, local-targets-sync.ts). */
export async function send(client: ClusterClient, action: Action): Promise<void> {
  if (action.kind === "create") await client.request("POST", WEBHOOK_CONFIGURATIONS_PATH, { body: action.object });
  else if (action.kind === "update")
    await client.request("PUT", `${WEBHOOK_CONFIGURATIONS_PATH}/${action.object.metadata.name}`, {
      body: action.object,
    });
  else
    await client.request("DELETE", `${WEBHOOK_CONFIGURATIONS_PATH}/${action.name}`, {
      body: { apiVersion: "v1", kind: "DeleteOptions", ...(action.uid ? { preconditions: { uid: action.uid } } : {}) },
    });
}
