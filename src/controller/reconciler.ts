// One reconcile pass: observe (read rules and our configurations from the informers, resolve workspace paths, check
// references against kcp) → plan the writes (plan.ts, pure) → execute them (writer.ts) → plan and write the
// statuses that changed. Nothing is remembered between passes except caches of facts (which endpoint serves which
// logical cluster; path → logical cluster in the resolver), each dropped when a write there fails.
import type { Logger } from "pino";
import type { IndexReport, WebhookSettings } from "../api/index-report.ts";
import type { Verdicts } from "../api/verdicts.ts";
import { orStored } from "../kcp/stored-resolution.ts";
import { parseRule, referencedPaths, type ParsedRule } from "../api/rule.ts";
import { CLUSTER_ANNOTATION, ruleKeyString, type LogicalClusterName, type WorkspacePath } from "../api/types.ts";
import { DEPENDENCY_RULES_PATH, parseLogicalClusterName } from "../api/wire.ts";
import { fetchExportFacts } from "../kcp/exports.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import { realClock, type Clock } from "../util/clock.ts";
import type { PassResult } from "../util/workloop.ts";
import { isOurs, type ExistingConfiguration } from "./actions.ts";
import { LOCAL_TARGETS_LABEL } from "./local-targets.ts";
import { LocalTargets, type LocalTargetsEdges } from "./local-targets-sync.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";
import type { ControllerMetrics } from "./metrics.ts";
import {
  planStatuses,
  planWrites,
  installedNowhere,
  rulesOverCap,
  type Observation,
  type ObservedRule,
  type RuleObject,
} from "./plan.ts";
import { checkReferences } from "./references.ts";
import { syncRuleWebhookLogged, type WorkspaceRequests } from "./rule-admission-config.ts";
import type { InstallResult } from "./status.ts";
import { Writer, type ClusterClient } from "./writer.ts";

export interface Listed<T> {
  endpoint: string;
  object: T;
}

/** Local targets' record, watches and shards are passed through (local-targets-sync.ts says what they are). */
export interface ReconcilerDeps extends LocalTargetsEdges {
  rules: { listWithEndpoints(): Listed<RuleObject>[]; hasSynced(): boolean; endpoints(): string[] };
  configurations: { listWithEndpoints(): Listed<ValidatingWebhookConfiguration>[]; hasSynced(): boolean };
  resolver: { resolve(path: WorkspacePath): Promise<Resolution>; invalidateCluster(cluster: string): void };
  /** A client for one logical cluster through one virtual workspace endpoint. */
  clientFor: (endpoint: string, cluster: LogicalClusterName) => ClusterClient;
  webhookBaseUrl: string;
  /** The current CA bundle (base64 PEM), read again every pass so a rotated file reaches existing webhooks. */
  caBundle: () => string | undefined;
  /** The dep-ctrl workspace itself, where the rule admission webhook is configured; undefined turns that off. */
  ruleWebhook?: WorkspaceRequests;
  /** The webhook's dependents index report (src/api/index-report.ts); undefined when there is none. */
  readIndexReport?: () => Promise<IndexReport | undefined>;
  /** What the webhook replicas enforce, from the same report; undefined when they do not say (older, or none). */
  readWebhookSettings?: () => Promise<WebhookSettings | undefined>;
  /** The rule verdicts in the dep-ctrl workspace (src/api/verdicts.ts): read, and rewritten where a pass changed them. */
  verdicts: VerdictBook;
  /** Rules one workspace may have enforced (src/api/rule-cap.ts); past it a rule is not installed. Unset: no cap. */
  maxRulesPerWorkspace?: number | undefined;
  /** Checked before every write: a replica that lost the leader lease must stop writing at once. */
  mayWrite: () => boolean;
  exportName: string;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Stamps condition transitions (default the real clock). */
  clock?: Clock;
}

/** The verdict store as a pass uses it (verdict-store.ts in production). */
export interface VerdictBook {
  hasSynced(): boolean;
  current(): Verdicts;
  write(
    want: Verdicts,
    mayWrite: () => boolean,
  ): Promise<{ kind: "written"; buckets: number } | { kind: "conflict" } | { kind: "failed"; error: string }>;
}

/** How soon a pass runs again while a rule waits for the webhook's first list of its dependent type. */
export const INDEX_POLL_MS = 3_000;

const clusterOf = (o: { metadata: { annotations?: Record<string, string> } }): LogicalClusterName | undefined =>
  parseLogicalClusterName(o.metadata.annotations?.[CLUSTER_ANNOTATION]);

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly writer: Writer;
  private readonly local: LocalTargets;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.local = new LocalTargets({ ...deps, endpoints: () => deps.rules.endpoints() });
    this.writer = new Writer({
      clientFor: deps.clientFor,
      endpoints: () => deps.rules.endpoints(),
      onWriteFailed: (cluster) => deps.resolver.invalidateCluster(cluster),
      exportName: deps.exportName,
      logger: deps.logger,
      metrics: deps.metrics,
    });
  }

  async reconcile(): Promise<PassResult> {
    const { metrics, logger } = this.deps;
    const end = metrics.passDuration.startTimer();
    try {
      const { rules, configurations, verdicts } = this.deps;
      if (!rules.hasSynced() || !configurations.hasSynced() || !verdicts.hasSynced()) {
        // Acting on half a list would delete configurations of rules not listed yet.
        metrics.reconciles.inc({ result: "incomplete" });
        return { requeueAfterMs: 1_000 };
      }
      const result = await this.pass(await this.observe());
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

  private async observe(): Promise<Observation> {
    const rules: ObservedRule[] = [];
    for (const { endpoint, object } of this.deps.rules.listWithEndpoints()) {
      const parsed = parseRule(object);
      if (parsed) rules.push({ parsed, object, endpoint });
      const cluster = clusterOf(object);
      if (cluster) this.writer.learn(cluster, endpoint);
    }
    this.deps.metrics.rules.set(rules.length);
    const existing: ExistingConfiguration[] = [];
    for (const { endpoint, object } of this.deps.configurations.listWithEndpoints()) {
      const cluster = clusterOf(object);
      // A local-target configuration (local-targets.ts) in a workspace that is also a provider is not this plan's.
      if (!cluster || !isOurs(object) || object.metadata.labels?.[LOCAL_TARGETS_LABEL] !== undefined) continue;
      existing.push({ cluster, object });
      this.writer.learn(cluster, endpoint, true);
    }
    const parsed = rules.map((r) => r.parsed);
    const verdicts = this.deps.verdicts.current();
    const resolutions = await this.resolveAll(parsed, verdicts);
    const overCap = rulesOverCap(rules, this.deps.maxRulesPerWorkspace);
    // A rule past its author's cap costs no reads of other workspaces: it is not installed whatever they say.
    const references = await checkReferences(
      parsed.filter((p) => !overCap?.rules.has(ruleKeyString(p.key))),
      resolutions,
      (cluster, exportName, resources) =>
        fetchExportFacts(
          (endpoint, c, path) => this.deps.clientFor(endpoint, c).request("GET", path),
          this.writer.candidates(cluster),
          this.writer.knows(cluster),
          { cluster, exportName, resources },
        ),
      (path) => this.deps.resolver.resolve(path),
      (rule, unconfirmed) => this.deps.logger.info({ rule, unconfirmed }, "rule references not confirmed"),
    );
    const caBundle = this.deps.caBundle();
    const indexReport = await this.indexReport();
    const settings = await this.deps.readWebhookSettings?.().catch(() => undefined);
    return {
      rules,
      existing,
      resolutions,
      references,
      verdicts,
      ...(overCap ? { overCap } : {}),
      ...(caBundle ? { caBundle } : {}),
      ...(indexReport && settings?.lookup !== "live" ? { indexReport } : {}),
      ...(settings ? { webhook: settings } : {}),
    };
  }

  /** A report that cannot be read is left out (the condition then says nothing) and logged; it never fails a pass. */
  private async indexReport(): Promise<IndexReport | undefined> {
    try {
      return await this.deps.readIndexReport?.();
    } catch (err) {
      this.deps.logger.warn(
        { err: String(err), hint: "grant the controller get on the configmap in deploy/rbac/dep-ctrl-workspace.yaml" },
        "cannot read the webhook's dependents index report",
      );
      return undefined;
    }
  }

  private async pass(obs: Observation): Promise<PassResult> {
    const plan = planWrites(obs, this.deps.webhookBaseUrl);
    const installs = new Map<LogicalClusterName, InstallResult>();
    for (const cluster of plan.desired.keys()) installs.set(cluster, { ok: true });
    let stale = false;
    for (const action of plan.actions) {
      if (!this.deps.mayWrite()) return { requeueAfterMs: 1_000 };
      const outcome = await this.writer.apply(action, plan.pathsOf.get(action.cluster) ?? []);
      if (outcome.kind === "conflict") stale = true;
      else if (outcome.kind === "failed" && action.kind !== "delete")
        installs.set(action.cluster, { ok: false, error: outcome.message });
    }
    this.deps.metrics.webhookConfigurations.set([...installs.values()].filter((r) => r.ok).length);
    const local = await this.local.sync(obs, installedNowhere(obs));
    if (this.deps.ruleWebhook && this.deps.mayWrite())
      await syncRuleWebhookLogged(this.deps, this.deps.ruleWebhook, obs.caBundle);
    // A conflict means our view was stale; the next pass (soon, from the watch event) writes status from fresh data.
    if (stale) return { requeueAfterMs: 1_000 };

    const now = new Date((this.deps.clock ?? realClock).now()).toISOString().replace(/\.\d{3}Z$/, "Z");
    let statusErrors = 0;
    const { writes, awaitingIndex, verdicts } = planStatuses(obs, installs, now, local);
    // The verdicts first: they are what the webhook decides from and what the next pass starts from; a status is
    // only their picture for the rule's author.
    const kept = await this.deps.verdicts.write(verdicts, this.deps.mayWrite);
    if (kept.kind === "conflict") return { requeueAfterMs: 1_000 };
    if (kept.kind === "failed") {
      this.deps.metrics.errors.inc({ reason: "verdicts" });
      throw new Error(`writing the rule verdicts failed: ${kept.error}`);
    }
    for (const { rule, status } of writes) {
      if (!this.deps.mayWrite()) return { requeueAfterMs: 1_000 };
      if ((await this.writer.writeStatus(rule, status, DEPENDENCY_RULES_PATH)).kind === "failed") statusErrors++;
    }
    if (statusErrors > 0) throw new Error(`writing status of ${statusErrors} rule(s) failed`);
    const failedInstalls = [...installs.values()].filter((r) => !r.ok).length;
    if (failedInstalls > 0) throw new Error(`webhook configuration writes failed in ${failedInstalls} workspace(s)`);
    // The report is not watched: a rule waiting for the webhook's first list is looked at again soon, not at resync.
    return awaitingIndex > 0 ? { requeueAfterMs: INDEX_POLL_MS } : {};
  }

  /** Each path's resolution; one that fails transiently falls back to the stored last good one (stored-resolution.ts). */
  private async resolveAll(rules: readonly ParsedRule[], verdicts: Verdicts): Promise<Map<string, Resolution>> {
    const paths = referencedPaths(rules);
    const results = await Promise.all(paths.map((p) => this.deps.resolver.resolve(p)));
    const map = new Map<string, Resolution>();
    paths.forEach((p, i) => {
      const r = orStored(results[i]!, verdicts.paths.get(p));
      map.set(p, r);
      if (!r.ok || r.stale) {
        this.deps.metrics.errors.inc({ reason: "resolve_workspace" });
        this.deps.logger.warn(
          { workspace: p, reason: r.ok ? r.stale : r.reason, transient: r.ok || r.transient === true },
          r.ok ? "workspace path not resolved; keeping its last logical cluster" : "workspace path not resolved",
        );
      }
    });
    return map;
  }
}
