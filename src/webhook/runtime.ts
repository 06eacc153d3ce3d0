// The webhook as a running thing: the rule source (DependencyRules through the dep-ctrl export's virtual workspace,
// resolved into the registry), the DELETE and rule admission handlers, the HTTPS server and the health port.
import { Registry } from "prom-client";
import type { Logger } from "pino";
import type { DependencyRule } from "../api/types.ts";
import { DEPENDENCY_RULES_PATH } from "../api/wire.ts";
import type { VirtualWorkspaceOrigins } from "../kcp/endpoint-origins.ts";
import { fetchExportFacts } from "../kcp/exports.ts";
import { loadKcpConnection } from "../kcp/kubeconfig.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import { checkEndpointSlice, ExportWatch, NO_ENDPOINTS_HINT } from "../kcp/virtualworkspace.ts";
import { WorkspaceResolver } from "../kcp/workspaces.ts";
import { VerdictStore } from "../kcp/verdict-store.ts";
import { startHealthServer } from "../observability/health.ts";
import { realClock } from "../util/clock.ts";
import { loadKeyPair, type TlsFiles } from "./http/certs.ts";
import { createAdmissionHandler } from "./deletion/handler.ts";
import type { DependentsIndex } from "./deletion/index/index.ts";
import { registerIndexMetrics } from "./deletion/index/metrics.ts";
import { IndexReadiness } from "./deletion/index/readiness.ts";
import { indexEndpointPolicy, type IndexEndpointPolicy } from "./deletion/index/export-endpoints.ts";
import { startIndex, startLiveReport } from "./deletion/index/start.ts";
import type { IndexBudget } from "./deletion/index/budget.ts";
import { finderFor } from "./deletion/hybrid.ts";
import type { LookupMode } from "./deletion/protection.ts";
import type { RuleRegistry } from "./rules/registry.ts";
import { createWebhookMetrics, processMetrics, type WebhookMetrics } from "./metrics.ts";
import { createRuleAdmissionHandler } from "./rules/rule-admission.ts";
import { RuleSource } from "./rules/source.ts";
import { createOpenRequests, startWebhookServer, type TransportLimits } from "./http/server.ts";

export interface WebhookConfig {
  kubeconfig: string | undefined;
  apiExportName: string;
  bindAddress: string;
  webhookPort: number;
  tls: TlsFiles;
  healthProbeBindAddress: string;
  kcpBaseUrl: string | undefined;
  /** Caller authentication: only callers with a certificate from these CAs (and, if given, these subjects). */
  clientCAFile?: string;
  allowedClientSubjects?: string[];
  minTLSVersion?: "TLSv1.2" | "TLSv1.3";
  cipherSuites?: string;
  lookup?: LookupMode; // how dependents are found: index, live, or auto (default; deletion/hybrid.ts says which)
  /** Serve the Go original's /validate too (every provider's rules match there). */
  legacyValidateRoute?: boolean;
  enforceUnverifiedRules?: boolean; // rules whose author declined the read-only checks (docs/operations.md)
  maxRulesPerWorkspace?: number; // rules one workspace may have enforced (src/api/rule-cap.ts)
  limits?: TransportLimits; // review slots, queue, connections, body pace
  indexBudget?: Partial<IndexBudget>; // what the index keeps per consumer workspace (deletion/index/budget.ts)
  indexMemoryLimit?: number; // heap bytes the readable index may hold, shared fairly (deletion/index/ceiling.ts)
  virtualWorkspaceOrigins?: string[]; // shard origins the index may follow besides the dep-ctrl export's (endpoint-origins.ts)
  allowInsecureKcp?: boolean; // development only: plain http or insecure-skip-tls-verify in the kubeconfig
}

export interface RunningWebhook {
  webhookPort: number;
  healthPort: number;
  stop(): Promise<void>;
}

/** Stops what was started, last first: stop taking requests before closing the kcp connections. */
async function stopAll(steps: readonly (() => unknown)[]): Promise<void> {
  for (const step of [...steps].reverse()) await step();
}

/** Starts everything; throws (with a one-line message) when the configuration or the environment is wrong. */
export async function startWebhook(flags: WebhookConfig, logger: Logger): Promise<RunningWebhook> {
  loadKeyPair(flags.tls); // fail before talking to kcp when the certificate is missing or broken
  const secure = flags.allowInsecureKcp !== true;
  const conn = loadKcpConnection({ kubeconfig: flags.kubeconfig, requireWorkspace: true, requireSecure: secure });
  const steps: (() => unknown)[] = [() => conn.base.close()];
  try {
    const urls = await endpointsOf(conn, flags.apiExportName);
    if (urls.length === 0) logger.warn(NO_ENDPOINTS_HINT);

    const metricsRegistry = new Registry();
    processMetrics(metricsRegistry);
    const metrics = createWebhookMetrics(metricsRegistry);
    const resolver = new WorkspaceResolver({ base: conn.base });
    const lookupBase = flags.kcpBaseUrl ? conn.base.withBase(flags.kcpBaseUrl) : conn.base;
    const endpoints = indexEndpointPolicy(flags.virtualWorkspaceOrigins, urls, resolver, metricsRegistry);
    const indexed = startLookups(flags, conn.workspaceClient, lookupBase, endpoints, logger, steps);
    const index = indexed?.index;
    if (index) registerIndexMetrics(metricsRegistry, index);
    const { rules, source } = ruleSource(conn, flags, { resolver, origins: endpoints.origins }, logger, metrics, index);
    source.start();
    steps.push(() => source.stop());

    const handler = createAdmissionHandler({
      registry: () => source.current(),
      finder: finderFor(flags.lookup ?? "auto", index, lookupBase, logger, metricsRegistry, indexed?.book),
      logger: logger.child({ part: "admission" }),
      metrics,
    });
    const server = await startWebhookServer({
      ...serverOptions(flags),
      onRefusal: (reason) => metrics.refusals.inc({ reason }),
      openRequests: createOpenRequests(metricsRegistry),
      handler,
      ruleHandler: ruleAdmission(rules, resolver, logger, flags.maxRulesPerWorkspace, source),
      logger,
      metrics,
    });
    steps.push(() => server.close());
    const health = await startHealthServer(flags.healthProbeBindAddress, metricsRegistry, {
      "registry-synced": () => source.notReadyReason(),
      ...(index ? { "index-synced": indexReadiness(index, () => !source.notReadyReason(), logger) } : {}),
    });
    steps.push(() => health.close());
    return {
      webhookPort: server.port,
      healthPort: health.port,
      stop: () => stopAll(steps),
    };
  } catch (err) {
    await stopAll(steps);
    throw err;
  }
}

/**
 * The dependents index and its report (index and auto mode), or the report alone (live mode): the controller writes
 * each rule's Ready from what this replica enforces, whatever its index sees.
 */
function startLookups(
  flags: WebhookConfig,
  depCtrl: RestClient,
  lookupBase: RestClient,
  endpoints: IndexEndpointPolicy,
  logger: Logger,
  steps: (() => unknown)[],
): ReturnType<typeof startIndex> | undefined {
  const settings = { lookup: flags.lookup ?? "auto", enforceUnverified: flags.enforceUnverifiedRules === true };
  if (flags.lookup === "live") {
    startLiveReport(depCtrl, logger, steps, settings);
    return undefined;
  }
  const { indexBudget: budget, indexMemoryLimit: memoryLimit } = flags;
  return startIndex(depCtrl, lookupBase, logger, steps, { endpoints, budget, memoryLimit, settings });
}

/** The HTTPS server's listening, TLS and caller-authentication settings, from the flags. */
function serverOptions(flags: WebhookConfig) {
  return {
    host: flags.bindAddress,
    port: flags.webhookPort,
    tls: { ...flags.tls, ...(flags.clientCAFile ? { clientCAFile: flags.clientCAFile } : {}) },
    requireClientCert: flags.clientCAFile !== undefined,
    ...(flags.allowedClientSubjects ? { allowedClientSubjects: flags.allowedClientSubjects } : {}),
    ...(flags.minTLSVersion ? { minTLSVersion: flags.minTLSVersion } : {}),
    ...(flags.cipherSuites ? { cipherSuites: flags.cipherSuites } : {}),
    legacyValidateRoute: flags.legacyValidateRoute === true,
    ...flags.limits,
  };
}

/** Rule checks read providers' exports through the dep-ctrl export's virtual workspace (their consent: the claims). */
function ruleAdmission(
  rules: ExportWatch<DependencyRule>,
  resolver: WorkspaceResolver,
  logger: Logger,
  cap: number | undefined,
  source: RuleSource,
): ReturnType<typeof createRuleAdmissionHandler> {
  return createRuleAdmissionHandler({
    deps: {
      ...(cap !== undefined ? { authorCap: { cap, caps: () => source.state.caps } } : {}),
      resolve: (path) => resolver.resolve(path),
      fetchExport: (cluster, exportName, resources) =>
        fetchExportFacts((endpoint, c, p) => rules.clientFor(endpoint, c).get(p), rules.endpoints(), false, {
          cluster,
          exportName,
          resources,
        }),
    },
    logger: logger.child({ part: "rule-admission" }),
  });
}

/** The readiness check of a starting replica's index (src/webhook/deletion/index/readiness.ts says why it is bounded). */
function indexReadiness(
  index: DependentsIndex,
  registrySynced: () => boolean,
  logger: Logger,
): () => string | undefined {
  const readiness = new IndexReadiness({
    health: () => index.health(),
    registrySynced,
    clock: realClock,
    onGraceExpired: (syncing) =>
      logger.warn(
        { syncing },
        "ready without the index of these types: still listing; their deletes get 503 until done",
      ),
  });
  return () => readiness.notReadyReason();
}

async function endpointsOf(conn: ReturnType<typeof loadKcpConnection>, exportName: string): Promise<string[]> {
  try {
    return await checkEndpointSlice(conn.workspaceClient, exportName, conn.workspace);
  } catch (err) {
    if (isApiError(err)) throw new Error(`cannot read APIExportEndpointSlices in ${conn.workspace}: ${err.message}`);
    throw err;
  }
}

/** DependencyRules through the dep-ctrl export's virtual workspace, resolved into the registry on the work loop. */
function ruleSource(
  conn: ReturnType<typeof loadKcpConnection>,
  { apiExportName: exportName, enforceUnverifiedRules, maxRulesPerWorkspace }: WebhookConfig,
  { resolver, origins }: { resolver: WorkspaceResolver; origins: VirtualWorkspaceOrigins },
  logger: Logger,
  metrics: WebhookMetrics,
  index: DependentsIndex | undefined,
): { rules: ExportWatch<DependencyRule>; source: RuleSource } {
  // The source registers its change callback when it builds its watch, right below.
  let onRulesChanged = (): void => undefined;
  // The controller's verdicts and stored path resolutions, in the dep-ctrl workspace (src/api/verdicts.ts).
  const verdicts = new VerdictStore({
    client: conn.workspaceClient,
    logger: logger.child({ part: "verdicts" }),
    onChange: () => source.refresh(),
  });
  const rules = new ExportWatch<DependencyRule>({
    exportWorkspace: conn.workspaceClient,
    exportName,
    resourcePath: DEPENDENCY_RULES_PATH,
    logger: logger.child({ part: "rules" }),
    onChange: () => onRulesChanged(),
    // The dep-ctrl export's own endpoints name the shards' virtual-workspace origins the index may follow.
    onEndpoints: (urls) => origins.learn(urls),
  });
  const source = new RuleSource({
    watch: (onChange) => {
      onRulesChanged = onChange;
      return rules;
    },
    resolver,
    logger: logger.child({ part: "registry" }),
    metrics,
    enforceUnverified: enforceUnverifiedRules === true,
    maxRulesPerWorkspace,
    verdicts,
    ...(index ? { onRegistry: (registry: RuleRegistry) => index.follow(registry) } : {}),
  });
  return { rules, source };
}
