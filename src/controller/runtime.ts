// The controller as a running thing: its sources (the rule watch through the dep-ctrl export's virtual workspace, the
// webhook-configuration informer following the same shard endpoints, the CA bundle file), the reconciler, the work
// loop, leader election, health port and provider initializer. Followers keep informers warm; only the leader writes.
import {
  INDEX_REPORT_PATH,
  parseIndexReport,
  parseReportSettings,
  type IndexReport,
  type WebhookSettings,
} from "../api/index-report.ts";
import { Registry } from "prom-client";
import type { Logger } from "pino";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type LogicalClusterName } from "../api/types.ts";
import { DEPENDENCY_RULES_PATH, WEBHOOK_CONFIGURATIONS_PATH } from "../api/wire.ts";
import { Informer } from "../kcp/informer.ts";
import { loadKcpConnection } from "../kcp/kubeconfig.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import { checkEndpointSlice, ExportWatch, NoEndpointSliceError } from "../kcp/virtualworkspace.ts";
import { WorkspaceResolver } from "../kcp/workspaces.ts";
import { startHealthServer } from "../observability/health.ts";
import { realClock, type Clock } from "../util/clock.ts";
import { WorkLoop } from "../util/workloop.ts";
import { CaBundleFile } from "./ca-bundle.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";
import { controllerLeadership, elect, type LeaderElector } from "./leader.ts";
import { createMetrics } from "./metrics.ts";
import type { RuleObject } from "./plan.ts";
import { Reconciler, type ReconcilerDeps } from "./reconciler.ts";
import { VerdictStore } from "../kcp/verdict-store.ts";
import { localTargetsEdges } from "./local-targets-sync.ts";
import { providerInitializerOf, type ProviderInitializerConfig } from "./initializer-wiring.ts";
import { localTargetWatchesOf } from "./local-targets-watch.ts";

export interface ControllerConfig extends ProviderInitializerConfig {
  kubeconfig?: string;
  apiExportName: string;
  webhookUrl: string;
  caBundleFile?: string;
  healthAddress: string;
  leaderElect: boolean;
  leaseName: string;
  leaseNamespace: string;
  resyncMs: number;
  validateRules: boolean;
  maxRulesPerWorkspace?: number; // rules one workspace may have enforced (src/api/rule-cap.ts); unset: no cap
  allowInsecureKcp?: boolean; // development only: plain http or insecure-skip-tls-verify (refused otherwise)
}

export interface RunningController {
  healthPort: number;
  stop(): Promise<void>;
}

/** Checks the export's endpoint slice is there and readable, with errors that say what to do. */
async function checkExport(conn: ReturnType<typeof loadKcpConnection>, exportName: string): Promise<void> {
  try {
    await checkEndpointSlice(conn.workspaceClient, exportName, conn.workspace);
  } catch (err) {
    if (err instanceof NoEndpointSliceError) throw err;
    if (isApiError(err, 403) || isApiError(err, 401))
      throw new Error(
        `not allowed to list APIExportEndpointSlices in ${conn.workspace} (${(err as Error).message}): ` +
          `apply deploy/rbac/dep-ctrl-workspace.yaml there for this identity`,
      );
    throw new Error(`cannot reach kcp at ${conn.baseUrl}: ${(err as Error).message}`);
  }
}

export async function startController(
  config: ControllerConfig,
  logger: Logger,
  clock: Clock = realClock,
): Promise<RunningController> {
  const conn = loadKcpConnection({
    kubeconfig: config.kubeconfig,
    requireWorkspace: true,
    requireSecure: config.allowInsecureKcp !== true,
  });
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const caBundle = caBundleOf(config, metrics, logger);
  await checkExport(conn, config.apiExportName);

  const loop = new WorkLoop({
    pass: () => reconciler.reconcile(),
    logger,
    resyncMs: config.resyncMs,
    clock,
  });
  const watched = sources(conn, config, logger, () => loop.enqueue());
  const { rules, configurations, sameEndpoints, verdicts } = watched;
  let elector: LeaderElector | undefined;
  const reconciler = reconcilerOf(config, conn, watched, {
    caBundle: () => caBundle?.current(),
    mayWrite: () => !elector || elector.isLeader(),
    logger,
    metrics,
    clock,
  });

  const health = await startHealthServer(config.healthAddress, registry, {
    informers: () =>
      rules.hasSynced() && configurations.hasSynced() && sameEndpoints() && verdicts.hasSynced()
        ? undefined
        : "informers not synced yet",
  });
  logger.info(
    { workspace: conn.workspace, export: config.apiExportName, webhookUrl: config.webhookUrl, health: health.port },
    "controller started",
  );
  for (const source of [rules, verdicts]) source.start();
  const lead = controllerLeadership({ loop, verdicts, localTargets: watched.localTargets });
  const election = elect(config, conn.workspaceClient, { logger, metrics, clock }, lead, (e) => (elector = e));
  const initializer = providerInitializerOf(config, conn, logger, clock, () => !elector || elector.isLeader());
  return {
    healthPort: health.port,
    async stop() {
      logger.info("shutting down");
      await loop.stop();
      await Promise.all([election.stop(), initializer?.stop()]);
      for (const source of [rules, configurations, verdicts, watched.localTargets]) source.stop();
      await health.close();
      conn.base.close();
    },
  };
}

/** The CA bundle file, when configured; a file that cannot be read keeps the previous bundle and is counted. */
function caBundleOf(
  config: ControllerConfig,
  metrics: ReturnType<typeof createMetrics>,
  logger: Logger,
): CaBundleFile | undefined {
  if (!config.caBundleFile) return undefined;
  return new CaBundleFile(config.caBundleFile, (err) => {
    metrics.errors.inc({ reason: "ca_bundle" });
    logger.warn({ err: err.message }, "keeping the previous CA bundle");
  });
}

/** The reconciler over the watched sources; it writes only while `mayWrite` (the leader, or no election). */
function reconcilerOf(
  config: ControllerConfig,
  conn: ReturnType<typeof loadKcpConnection>,
  { rules, configurations, sameEndpoints, verdicts, localTargets }: ReturnType<typeof sources>,
  deps: Pick<ReconcilerDeps, "caBundle" | "mayWrite" | "logger" | "metrics"> & { clock: Clock },
): Reconciler {
  return new Reconciler({
    rules,
    configurations: {
      listWithEndpoints: () => configurations.listWithEndpoints(),
      hasSynced: () => sameEndpoints() && configurations.hasSynced(),
    },
    resolver: new WorkspaceResolver({ base: conn.base, clock: deps.clock }),
    clientFor: (endpoint, cluster: LogicalClusterName) => rules.clientFor(endpoint, cluster),
    webhookBaseUrl: config.webhookUrl,
    ...(config.validateRules ? { ruleWebhook: conn.workspaceClient } : {}),
    readIndexReport: () => readIndexReport(conn.workspaceClient),
    readWebhookSettings: () => readWebhookSettings(conn.workspaceClient),
    verdicts,
    ...localTargetsEdges(conn, deps.logger),
    localTargetWatches: localTargets,
    exportName: config.apiExportName,
    maxRulesPerWorkspace: config.maxRulesPerWorkspace,
    ...deps,
  });
}

/** The webhook's dependents index report, or undefined when there is none (a webhook in live mode, or none yet). */
async function readIndexReport(client: RestClient): Promise<IndexReport | undefined> {
  return parseIndexReport(await client.getOptional(INDEX_REPORT_PATH));
}

/** What the webhook replicas enforce, or undefined when they do not say (none yet, or older than the field). */
async function readWebhookSettings(client: RestClient): Promise<WebhookSettings | undefined> {
  return parseReportSettings(await client.getOptional(INDEX_REPORT_PATH));
}

/** The rule watch and the webhook-configuration informer. The informer follows the rule watch's endpoints from the
 * start (not from inside a pass), so a standby's cache is as warm as the leader's; the local-target watches, passes. */
function sources(
  conn: ReturnType<typeof loadKcpConnection>,
  config: ControllerConfig,
  logger: Logger,
  enqueue: () => void,
) {
  const configurations = new Informer<ValidatingWebhookConfiguration>({
    client: conn.workspaceClient,
    path: `/clusters/*${WEBHOOK_CONFIGURATIONS_PATH}`,
    query: { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` },
    logger: logger.child({ informer: "validatingwebhookconfigurations" }),
    onChange: enqueue,
  });
  const rules = new ExportWatch<RuleObject>({
    exportWorkspace: conn.workspaceClient,
    exportName: config.apiExportName,
    resourcePath: DEPENDENCY_RULES_PATH,
    logger,
    onChange: enqueue,
    onEndpoints: (urls) => configurations.setEndpoints(urls),
  });
  const sameEndpoints = (): boolean =>
    configurations.endpoints().sort().join(" ") === rules.endpoints().sort().join(" ");
  const verdicts = new VerdictStore({ client: conn.workspaceClient, logger, onChange: enqueue });
  const localTargets = localTargetWatchesOf({ client: conn.workspaceClient, logger, onChange: enqueue });
  return { rules, configurations, sameEndpoints, verdicts, localTargets };
}
