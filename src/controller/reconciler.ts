// The I/O side of one reconcile pass: read all rules and our webhook configurations from the informers, resolve
// every workspace path, compute the desired state (desired.ts), apply the planned writes through the dep-ctrl
// export's virtual workspace, and write each rule's status when it changed. Nothing is remembered between passes
// except caches of facts (which endpoint serves which logical cluster), dropped whenever a write there fails.
import type { Logger } from "pino";
import {
  CLUSTER_ANNOTATION,
  GROUP,
  type LogicalClusterName,
  PLURAL,
  ruleKeyString,
  VERSION,
  VWC_NAME,
  MANAGED_BY_LABEL,
} from "../api/types.ts";
import { fetchExportFacts } from "../kcp/exports.ts";
import { isApiError, type RequestOptions } from "../kcp/rest.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { findCycles } from "./cycles.ts";
import { checkReferences } from "./references.ts";
import { ruleWebhookConfiguration, syncRuleWebhook, type WorkspaceRequests } from "./rule-webhook.ts";
import {
  type Action,
  desiredConfigurations,
  type ExistingConfiguration,
  isOurs,
  keptWorkspaces,
  planActions,
  type ValidatingWebhookConfiguration,
} from "./desired.ts";
import type { PassResult } from "./loop.ts";
import type { ControllerMetrics } from "./metrics.ts";
import { parseRule, referencedPaths, type ParsedRule } from "../api/rule.ts";
import { computeStatus, type InstallResult, statusChanged } from "./status.ts";

export const VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
export const RULES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

/** What the reconciler needs of a REST client aimed at `<vw endpoint>/clusters/<cluster>`. */
export interface ClusterClient {
  request<T>(method: string, path: string, opts?: RequestOptions): Promise<T>;
}

export interface Listed<T> {
  endpoint: string;
  object: T;
}

export interface RuleObject {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  status?: unknown;
  [k: string]: unknown;
}

export interface ReconcilerDeps {
  rules: { listWithEndpoints(): Listed<RuleObject>[]; hasSynced(): boolean; endpoints(): string[] };
  configurations: { listWithEndpoints(): Listed<ValidatingWebhookConfiguration>[]; hasSynced(): boolean };
  resolver: { resolve(path: string): Promise<Resolution>; invalidateCluster(cluster: string): void };
  /** A client for one logical cluster through one virtual workspace endpoint. */
  clientFor: (endpoint: string, cluster: LogicalClusterName) => ClusterClient;
  webhookBaseUrl: string;
  /** The current CA bundle (base64 PEM), read again every pass so a rotated file reaches existing webhooks. */
  caBundle: () => string | undefined;
  /** The dep-ctrl workspace itself, where the rule admission webhook is configured; undefined turns that off. */
  ruleWebhook?: WorkspaceRequests;
  /** Checked before every write: a replica that lost the leader lease must stop writing at once. */
  mayWrite: () => boolean;
  exportName: string;
  logger: Logger;
  metrics: ControllerMetrics;
  now?: () => Date;
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

export class Reconciler {
  private readonly d: ReconcilerDeps;
  /** logical cluster → virtual workspace endpoint that served a successful write there. */
  private readonly endpointOf = new Map<LogicalClusterName, string>();

  constructor(deps: ReconcilerDeps) {
    this.d = deps;
  }

  async reconcile(): Promise<PassResult> {
    const { metrics, logger } = this.d;
    const end = metrics.passDuration.startTimer();
    try {
      if (!this.d.rules.hasSynced() || !this.d.configurations.hasSynced()) {
        // Acting on half a list would delete configurations of rules not listed yet.
        metrics.reconciles.inc({ result: "incomplete" });
        return { requeueAfterMs: 1_000 };
      }
      const result = await this.pass();
      metrics.reconciles.inc({ result: result.requeueAfterMs !== undefined ? "incomplete" : "success" });
      return result;
    } catch (err) {
      metrics.reconciles.inc({ result: "error" });
      metrics.errors.inc({ reason: "reconcile" });
      logger.debug({ err: String(err) }, "reconcile pass failed");
      throw err;
    } finally {
      end();
    }
  }

  private async pass(): Promise<PassResult> {
    const { metrics } = this.d;
    const listedRules = this.d.rules.listWithEndpoints();
    const rules: { parsed: ParsedRule; listed: Listed<RuleObject> }[] = [];
    for (const listed of listedRules) {
      const parsed = parseRule(listed.object);
      if (parsed) rules.push({ parsed, listed });
    }
    metrics.rules.set(rules.length);

    for (const { endpoint, object } of listedRules) {
      const cluster = object.metadata.annotations?.[CLUSTER_ANNOTATION] as LogicalClusterName | undefined;
      if (cluster && !this.endpointOf.has(cluster)) this.endpointOf.set(cluster, endpoint);
    }
    const resolutions = await this.resolveAll(rules.map((r) => r.parsed));
    const transientPaths = [...resolutions].filter(([, r]) => !r.ok && r.transient === true).map(([p]) => p);
    const references = await checkReferences(
      rules.map((r) => r.parsed),
      resolutions,
      (cluster, exportName, resources) =>
        fetchExportFacts(
          (endpoint, c, path) => this.d.clientFor(endpoint, c as LogicalClusterName).request("GET", path),
          this.candidates(cluster as LogicalClusterName),
          this.endpointOf.has(cluster as LogicalClusterName),
          { cluster, exportName, resources },
        ),
    );
    const caBundle = this.d.caBundle();
    const desired = desiredConfigurations({
      rules: rules.map((r) => r.parsed),
      resolutions,
      webhookBaseUrl: this.d.webhookBaseUrl,
      ...(caBundle ? { caBundle } : {}),
      excluded: (rule, dep) => {
        const v = references.get(ruleKeyString(rule.key));
        return v !== undefined && (v.dependentInvalid || v.invalidDependencies.has(dep.index));
      },
    });

    const existing: ExistingConfiguration[] = [];
    for (const { endpoint, object } of this.d.configurations.listWithEndpoints()) {
      const cluster = object.metadata.annotations?.[CLUSTER_ANNOTATION] as LogicalClusterName | undefined;
      if (!cluster || !isOurs(object)) continue;
      existing.push({ cluster, object });
      this.endpointOf.set(cluster, endpoint);
    }

    const pathsOf = new Map<LogicalClusterName, string[]>();
    for (const [p, r] of [...resolutions].sort(([a], [b]) => (a < b ? -1 : 1)))
      if (r.ok) pathsOf.set(r.cluster, [...(pathsOf.get(r.cluster) ?? []), p]);

    const actions = planActions(desired.configurations, existing, { keep: keptWorkspaces(existing, transientPaths) });
    const installs = new Map<LogicalClusterName, InstallResult>();
    for (const cluster of desired.configurations.keys()) installs.set(cluster, { ok: true });
    let incomplete = false;
    for (const action of actions) {
      if (!this.d.mayWrite()) return { requeueAfterMs: 1_000 };
      const outcome = await this.apply(action, pathsOf.get(action.cluster) ?? []);
      if (outcome === "conflict") incomplete = true;
      else if (outcome !== "ok" && action.kind !== "delete")
        installs.set(action.cluster, { ok: false, error: outcome });
    }
    const installed = [...installs.values()].filter((r) => r.ok).length;
    metrics.webhookConfigurations.set(installed);
    if (this.d.ruleWebhook && this.d.mayWrite()) await this.syncRuleWebhook(this.d.ruleWebhook, caBundle);

    // A conflict means our view was stale; the next pass (soon, from the watch event) writes status from fresh data.
    if (incomplete) return { requeueAfterMs: 1_000 };

    const cycles = findCycles(
      rules.flatMap(({ parsed }) =>
        parsed.dependent
          ? [{ key: parsed.key, dependent: parsed.dependent, dependencies: parsed.dependencies.map((d) => d.target) }]
          : [],
      ),
    );
    const now = (this.d.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, "Z");
    let statusErrors = 0;
    for (const { parsed, listed } of rules) {
      const own = new Map<string, Resolution>();
      for (const dep of parsed.dependencies) {
        const r = resolutions.get(dep.path);
        if (r) own.set(dep.path, r);
      }
      const cycle = cycles.get(ruleKeyString(parsed.key));
      const refs = references.get(ruleKeyString(parsed.key));
      const status = computeStatus(
        parsed,
        { resolutions: own, installs, ...(cycle ? { cycle } : {}), ...(refs ? { references: refs } : {}) },
        listed.object.status as Parameters<typeof computeStatus>[2],
        now,
      );
      if (!statusChanged(listed.object.status, status)) continue;
      if (!this.d.mayWrite()) return { requeueAfterMs: 1_000 };
      if (!(await this.writeStatus(listed, parsed, status))) statusErrors++;
    }
    if (statusErrors > 0) throw new Error(`writing status of ${statusErrors} rule(s) failed`);
    const failedInstalls = [...installs.values()].filter((r) => !r.ok).length;
    if (failedInstalls > 0) throw new Error(`webhook configuration writes failed in ${failedInstalls} workspace(s)`);
    return {};
  }

  private async resolveAll(rules: readonly ParsedRule[]): Promise<Map<string, Resolution>> {
    const paths = referencedPaths(rules);
    const results = await Promise.all(paths.map((p) => this.d.resolver.resolve(p)));
    const map = new Map<string, Resolution>();
    paths.forEach((p, i) => {
      const r = results[i]!;
      map.set(p, r);
      if (!r.ok || r.stale) {
        this.d.metrics.errors.inc({ reason: "resolve_workspace" });
        this.d.logger.warn(
          { workspace: p, reason: r.ok ? r.stale : r.reason, transient: r.ok || r.transient === true },
          r.ok ? "workspace path not resolved; keeping its last logical cluster" : "workspace path not resolved",
        );
      }
    });
    return map;
  }

  /** The rule admission webhook's configuration; a failure is logged and counted, it never fails the pass. */
  private async syncRuleWebhook(client: WorkspaceRequests, caBundle: string | undefined): Promise<void> {
    const outcome = await syncRuleWebhook(client, ruleWebhookConfiguration(this.d.webhookBaseUrl, caBundle));
    if (outcome === "unchanged") return;
    if (outcome === "created" || outcome === "updated") {
      this.d.metrics.writes.inc({ action: outcome === "created" ? "create" : "update" });
      this.d.logger.info(`${outcome} the rule admission webhook configuration in the dep-ctrl workspace`);
      return;
    }
    this.d.metrics.errors.inc({ reason: "rule_webhook" });
    this.d.logger.warn(
      outcome === "foreign"
        ? { problem: "a configuration with its name but without our label exists" }
        : {
            err: outcome.error,
            hint: "grant the controller validatingwebhookconfigurations in deploy/rbac/dep-ctrl-workspace.yaml",
          },
      "rule admission webhook not configured; rules are still checked by the controller",
    );
  }

  /** Endpoints to try for a cluster: the one known to serve it first, then the others. */
  private candidates(cluster: LogicalClusterName): string[] {
    const all = [...this.d.rules.endpoints()].sort();
    const known = this.endpointOf.get(cluster);
    return known && all.includes(known) ? [known, ...all.filter((e) => e !== known)] : all;
  }

  /** Applies one action; answers "ok", "conflict" (retry with fresh data) or the failure text for status. */
  private async apply(action: Action, paths: string[]): Promise<string> {
    const { logger, metrics } = this.d;
    const log = {
      workspace: paths.join(",") || undefined,
      cluster: action.cluster,
      action: action.kind,
      reason: action.reason,
    };
    const endpoints = this.candidates(action.cluster);
    if (endpoints.length === 0) return "no virtual workspace endpoint for the dep-ctrl export";
    let lastError: unknown;
    for (const endpoint of endpoints) {
      const client = this.d.clientFor(endpoint, action.cluster);
      try {
        if (action.kind === "create") await client.request("POST", VWC_PATH, { body: action.object });
        else if (action.kind === "update")
          await client.request("PUT", `${VWC_PATH}/${action.object.metadata.name}`, { body: action.object });
        else
          await client.request("DELETE", `${VWC_PATH}/${action.name}`, {
            body: {
              apiVersion: "v1",
              kind: "DeleteOptions",
              ...(action.uid ? { preconditions: { uid: action.uid } } : {}),
            },
          });
        this.endpointOf.set(action.cluster, endpoint);
        metrics.writes.inc({ action: action.kind });
        logger.info(log, `${action.kind}d ValidatingWebhookConfiguration ${VWC_NAME}`);
        return "ok";
      } catch (err) {
        lastError = err;
        if (action.kind === "delete" && isApiError(err, 404)) return "ok";
        if (isApiError(err, 409)) return this.onConflict(action, client, log);
        // 403/404 may just mean this shard's endpoint does not serve the cluster: try the next one.
        if (!(isApiError(err, 403) || isApiError(err, 404))) break;
        logger.debug(
          { ...log, endpoint, status: err.status },
          "endpoint does not serve this workspace; trying the next",
        );
      }
    }
    this.endpointOf.delete(action.cluster);
    this.d.resolver.invalidateCluster(action.cluster);
    metrics.errors.inc({ reason: "write_webhook_configuration" });
    const message = describeWriteError(lastError, this.d.exportName);
    logger.warn({ ...log, err: String(lastError) }, `could not ${action.kind} ValidatingWebhookConfiguration`);
    return message;
  }

  /** 409: either our cache is stale (retry) or a configuration we do not own has our name (tell the user). */
  private async onConflict(action: Action, client: ClusterClient, log: Record<string, unknown>): Promise<string> {
    if (action.kind !== "create") return "conflict";
    const found = await client
      .request<ValidatingWebhookConfiguration>("GET", `${VWC_PATH}/${action.object.metadata.name}`)
      .catch(() => undefined);
    if (!found || isOurs(found)) return "conflict";
    this.d.metrics.errors.inc({ reason: "write_webhook_configuration" });
    this.d.logger.warn(
      log,
      "a ValidatingWebhookConfiguration with our name but without our label exists; not touching it",
    );
    return (
      `a ValidatingWebhookConfiguration named ${VWC_NAME} not managed by this controller exists there ` +
      `(no ${MANAGED_BY_LABEL} label); delete it, or label it to hand it over`
    );
  }

  private async writeStatus(listed: Listed<RuleObject>, rule: ParsedRule, status: unknown): Promise<boolean> {
    const client = this.d.clientFor(listed.endpoint, rule.key.cluster);
    try {
      await client.request("PUT", `${RULES_PATH}/${rule.key.name}/status`, { body: { ...listed.object, status } });
      this.d.metrics.statusWrites.inc();
      this.d.logger.debug({ rule: ruleKeyString(rule.key) }, "rule status written");
      return true;
    } catch (err) {
      // Gone or changed since listed: the watch event brings a fresh copy and another pass.
      if (isApiError(err, 404) || isApiError(err, 409)) return true;
      this.d.metrics.errors.inc({ reason: "write_status" });
      this.d.logger.warn({ rule: ruleKeyString(rule.key), err: String(err) }, "could not write rule status");
      return false;
    }
  }
}
