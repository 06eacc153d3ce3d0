// The controller binary: turns DependencyRules into ValidatingWebhookConfigurations in provider workspaces.
// Usage: node src/cmd/controller.ts --kubeconfig=<dep-ctrl kubeconfig> --webhook-url=https://webhook:9443 [flags]
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { Registry } from "prom-client";
import { DEFAULT_EXPORT_NAME, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type LogicalClusterName } from "../api/types.ts";
import type { ValidatingWebhookConfiguration } from "../controller/desired.ts";
import { LeaderElector, restLeaseStore } from "../controller/leader.ts";
import { SingleKeyLoop } from "../controller/loop.ts";
import { createMetrics } from "../controller/metrics.ts";
import { Reconciler, RULES_PATH, VWC_PATH, type RuleObject } from "../controller/reconciler.ts";
import { Informer } from "../kcp/informer.ts";
import { ConfigError, loadKcpConnection } from "../kcp/kubeconfig.ts";
import { isApiError } from "../kcp/rest.ts";
import { checkEndpointSlice, ExportWatch, NoEndpointSliceError } from "../kcp/virtualworkspace.ts";
import { WorkspaceResolver } from "../kcp/workspaces.ts";
import { createLogger, type Logger } from "../observability/logger.ts";
import { startHealthServer } from "../observability/health.ts";

const USAGE = `Usage: controller [flags]

Installs a ValidatingWebhookConfiguration in every workspace whose resources a DependencyRule protects.

Flags (environment variable in brackets):
  --kubeconfig PATH                  kubeconfig whose server is the dep-ctrl workspace, .../clusters/<path> [KUBECONFIG]
  --api-export-name NAME             APIExport serving DependencyRules (default ${DEFAULT_EXPORT_NAME}) [API_EXPORT_NAME]
  --webhook-url URL                  https base URL of the webhook; /validate/<cluster> is appended [WEBHOOK_URL]
  --webhook-ca-bundle-file PATH      PEM CA bundle kcp uses to verify the webhook; re-read every pass [WEBHOOK_CA_BUNDLE_FILE]
  --health-probe-bind-address ADDR   /healthz /readyz /metrics listener (default :8081) [HEALTH_PROBE_BIND_ADDRESS]
  --leader-elect BOOL                elect a leader through a Lease so replicas never fight (default true) [LEADER_ELECT]
  --leader-election-name NAME        Lease name (default kcp-dependency-controller) [LEADER_ELECTION_NAME]
  --leader-election-namespace NS     Lease namespace in the dep-ctrl workspace (default default) [LEADER_ELECTION_NAMESPACE]
  --resync-period DURATION           full reconcile at least this often, e.g. 30s, 2m (default 30s) [RESYNC_PERIOD]
  --validate-rules BOOL              configure the webhook to refuse invalid DependencyRules at apply time
                                     (default true; needs the validatingwebhookconfigurations grant) [VALIDATE_RULES]
  -h, --help                         show this help
`;

export interface ControllerConfig {
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
}

class UsageError extends Error {}

function parseDuration(v: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(v.trim());
  if (!m) throw new UsageError(`${flag}: invalid duration "${v}" (want e.g. 30s, 2m)`);
  const ms = Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
  if (ms < 1_000) throw new UsageError(`${flag}: must be at least 1s`);
  return ms;
}

function parseBool(v: string, flag: string): boolean {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new UsageError(`${flag}: want true or false, got "${v}"`);
}

/** Flags win over environment variables. Throws UsageError with a one-line message. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): ControllerConfig | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      kubeconfig: { type: "string" },
      "api-export-name": { type: "string" },
      "webhook-url": { type: "string" },
      "webhook-ca-bundle-file": { type: "string" },
      "health-probe-bind-address": { type: "string" },
      "leader-elect": { type: "string" },
      "leader-election-name": { type: "string" },
      "leader-election-namespace": { type: "string" },
      "resync-period": { type: "string" },
      "validate-rules": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return "help";
  const pick = (flag: keyof typeof values, envName: string): string | undefined => {
    const v = values[flag] ?? env[envName];
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const webhookUrl = pick("webhook-url", "WEBHOOK_URL");
  if (!webhookUrl)
    throw new UsageError("--webhook-url is required (the webhook's https base URL, e.g. https://webhook.example:9443)");
  let url: URL;
  try {
    url = new URL(webhookUrl);
  } catch {
    throw new UsageError(`--webhook-url: "${webhookUrl}" is not a URL`);
  }
  if (url.protocol !== "https:")
    throw new UsageError(`--webhook-url: kcp only calls webhooks over https, got "${webhookUrl}"`);
  if (url.search || url.hash || url.username)
    throw new UsageError("--webhook-url: may not carry a query, fragment or user info");
  const kubeconfig = pick("kubeconfig", "KUBECONFIG");
  const caBundleFile = pick("webhook-ca-bundle-file", "WEBHOOK_CA_BUNDLE_FILE");
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    apiExportName: pick("api-export-name", "API_EXPORT_NAME") ?? DEFAULT_EXPORT_NAME,
    webhookUrl: webhookUrl.replace(/\/+$/, ""),
    ...(caBundleFile ? { caBundleFile } : {}),
    healthAddress: pick("health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS") ?? ":8081",
    leaderElect: parseBool(pick("leader-elect", "LEADER_ELECT") ?? "true", "--leader-elect"),
    leaseName: pick("leader-election-name", "LEADER_ELECTION_NAME") ?? "kcp-dependency-controller",
    leaseNamespace: pick("leader-election-namespace", "LEADER_ELECTION_NAMESPACE") ?? "default",
    resyncMs: parseDuration(pick("resync-period", "RESYNC_PERIOD") ?? "30s", "--resync-period"),
    validateRules: parseBool(pick("validate-rules", "VALIDATE_RULES") ?? "true", "--validate-rules"),
  };
}

/** Reads the PEM bundle and returns it base64-encoded, as a VWC's caBundle wants; throws a one-line error. */
export function readCaBundle(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(
      `cannot read webhook CA bundle ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError(`webhook CA bundle ${file} holds no PEM certificate`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new ConfigError(`webhook CA bundle ${file} holds an unreadable certificate: ${(err as Error).message}`);
    }
  }
  return Buffer.from(pem).toString("base64");
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Aborting it stops the controller gracefully (the binary wires SIGTERM/SIGINT to it). */
  signal?: AbortSignal;
  stdout?: (s: string) => void;
  stderr?: (s: string) => void;
  logger?: Logger;
}

/** Runs the controller until `signal` aborts; resolves to the process exit code. */
export async function run(argv: string[], opts: RunOptions = {}): Promise<number> {
  const stderr = opts.stderr ?? ((s: string) => process.stderr.write(s));
  const stdout = opts.stdout ?? ((s: string) => process.stdout.write(s));
  let config: ControllerConfig;
  try {
    const parsed = parseConfig(argv, opts.env ?? process.env);
    if (parsed === "help") {
      stdout(USAGE);
      return 0;
    }
    config = parsed;
  } catch (err) {
    stderr(`controller: ${(err as Error).message}\n${err instanceof UsageError ? "" : "run with --help for usage\n"}`);
    return 1;
  }
  try {
    return await start(config, opts);
  } catch (err) {
    stderr(`controller: ${(err as Error).message}\n`);
    return 1;
  }
}

async function start(config: ControllerConfig, opts: RunOptions): Promise<number> {
  const logger = opts.logger ?? createLogger("controller");
  let caBundle = config.caBundleFile ? readCaBundle(config.caBundleFile) : undefined;
  const conn = loadKcpConnection({ kubeconfig: config.kubeconfig, requireWorkspace: true });
  try {
    await checkEndpointSlice(conn.workspaceClient, config.apiExportName, conn.workspace);
  } catch (err) {
    if (err instanceof NoEndpointSliceError) throw err;
    if (isApiError(err, 403) || isApiError(err, 401))
      throw new Error(
        `not allowed to list APIExportEndpointSlices in ${conn.workspace} (${(err as Error).message}): ` +
          `apply deploy/rbac/dep-ctrl-workspace.yaml there for this identity`,
      );
    throw new Error(`cannot reach kcp at ${conn.baseUrl}: ${(err as Error).message}`);
  }

  const registry = new Registry();
  const metrics = createMetrics(registry);
  // Passes only run after start(), when everything below exists.
  const loop = new SingleKeyLoop({
    logger,
    resyncMs: config.resyncMs,
    pass: () => {
      // The VWC informer follows the same virtual workspace endpoints as the rules (one per shard).
      configurations.setEndpoints(rules.endpoints());
      return reconciler.reconcile();
    },
  });
  const enqueue = (): void => loop.enqueue();
  const rules = new ExportWatch<RuleObject>({
    exportWorkspace: conn.workspaceClient,
    exportName: config.apiExportName,
    resourcePath: RULES_PATH,
    logger,
    onChange: enqueue,
  });
  const configurations = new Informer<ValidatingWebhookConfiguration>({
    client: conn.workspaceClient,
    path: `/clusters/*${VWC_PATH}`,
    query: { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` },
    logger: logger.child({ informer: "validatingwebhookconfigurations" }),
    onChange: enqueue,
  });
  const sameEndpoints = (): boolean =>
    configurations.endpoints().sort().join(" ") === rules.endpoints().sort().join(" ");
  const resolver = new WorkspaceResolver({ base: conn.base });

  let elector: LeaderElector | undefined;
  const reconciler = new Reconciler({
    rules,
    configurations: {
      listWithEndpoints: () => configurations.listWithEndpoints(),
      hasSynced: () => sameEndpoints() && configurations.hasSynced(),
    },
    resolver,
    clientFor: (endpoint, cluster: LogicalClusterName) => rules.clientFor(endpoint, cluster),
    webhookBaseUrl: config.webhookUrl,
    caBundle: () => {
      if (!config.caBundleFile) return undefined;
      try {
        caBundle = readCaBundle(config.caBundleFile);
      } catch (err) {
        // Keep the last good bundle: a half-written file during rotation must not break every webhook.
        metrics.errors.inc({ reason: "ca_bundle" });
        logger.warn({ err: (err as Error).message }, "keeping the previous CA bundle");
      }
      return caBundle;
    },
    ...(config.validateRules ? { ruleWebhook: conn.workspaceClient } : {}),
    mayWrite: () => !elector || elector.isLeader(),
    exportName: config.apiExportName,
    logger,
    metrics,
  });

  const health = await startHealthServer(config.healthAddress, registry, {
    informers: () => (rules.hasSynced() && configurations.hasSynced() ? undefined : "informers not synced yet"),
  });
  logger.info(
    { workspace: conn.workspace, export: config.apiExportName, webhookUrl: config.webhookUrl, health: health.port },
    "controller started",
  );
  rules.start();

  const stop = new AbortController();
  const signal = opts.signal;
  const done = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener("abort", () => resolve(), { once: true });
  });

  let electing: Promise<void> | undefined;
  if (config.leaderElect) {
    elector = new LeaderElector({
      store: restLeaseStore(conn.workspaceClient, config.leaseNamespace, config.leaseName),
      name: config.leaseName,
      namespace: config.leaseNamespace,
      identity: `${os.hostname()}_${randomBytes(4).toString("hex")}`,
      logger,
      onStartedLeading: () => {
        metrics.leader.set(1);
        loop.start();
      },
      onStoppedLeading: () => {
        metrics.leader.set(0);
        void loop.stop();
      },
    });
    electing = elector.run(stop.signal);
  } else {
    metrics.leader.set(1);
    loop.start();
  }

  await done;
  logger.info("shutting down");
  await loop.stop();
  stop.abort();
  await electing;
  rules.stop();
  configurations.stop();
  await health.close();
  conn.base.close();
  return 0;
}

if (import.meta.main) {
  const ac = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) process.once(sig, () => ac.abort());
  // Exit explicitly: a stuck socket must not keep a stopped controller alive.
  process.exit(await run(process.argv.slice(2), { signal: ac.signal }));
}
