// The dependency-webhook binary: flags, wiring, graceful shutdown. `run(argv)` is the whole program, so tests can
// start it in-process; started as a script, it runs with the process's arguments.
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Registry, collectDefaultMetrics } from "prom-client";
import type { Logger } from "pino";
import { DEFAULT_EXPORT_NAME, type DependencyRule } from "../api/types.ts";
import { loadKcpConnection } from "../kcp/kubeconfig.ts";
import { checkEndpointSlice, ExportWatch, NO_ENDPOINTS_HINT } from "../kcp/virtualworkspace.ts";
import { WorkspaceResolver } from "../kcp/workspaces.ts";
import { isApiError } from "../kcp/rest.ts";
import { createLogger } from "../observability/logger.ts";
import { parseListenAddress, startHealthServer } from "../observability/health.ts";
import { loadKeyPair, type TlsFiles } from "../webhook/certs.ts";
import { createAdmissionHandler } from "../webhook/handler.ts";
import { LiveDependentFinder } from "../webhook/lookup.ts";
import { createWebhookMetrics } from "../webhook/metrics.ts";
import { RULES_PATH, RuleSource } from "../webhook/rules.ts";
import { createRuleAdmissionHandler } from "../webhook/rule-admission.ts";
import { fetchExportFacts } from "../kcp/exports.ts";
import { startWebhookServer } from "../webhook/server.ts";

export const USAGE = `Usage: dependency-webhook [flags]

Admission webhook denying DELETEs of objects still referenced by dependents (DependencyRules).

Flags:
  --kubeconfig PATH                 kubeconfig pointing at the dep-ctrl workspace (server .../clusters/<path>);
                                    default $KUBECONFIG
  --api-export-name NAME            APIExport serving DependencyRules (default ${DEFAULT_EXPORT_NAME})
  --bind-address ADDR               address the webhook listens on (default 0.0.0.0)
  --webhook-port PORT               HTTPS port of the webhook (default 9443)
  --tls-cert-file PATH              serving certificate (PEM); reloaded when it changes
  --tls-key-file PATH               serving key (PEM); reloaded when it changes
  --tls-cert-dir DIR                directory with tls.crt and tls.key, used when the two flags above are not set
                                    (default /etc/webhook-tls)
  --health-probe-bind-address ADDR  plain HTTP /healthz, /readyz and /metrics (default :8081)
  --kcp-base-url URL                where dependents are listed (default: the kubeconfig server without /clusters/...)
  --help                            show this help
`;

export class UsageError extends Error {
  override name = "UsageError";
}

export interface WebhookFlags {
  kubeconfig: string | undefined;
  apiExportName: string;
  bindAddress: string;
  webhookPort: number;
  tls: TlsFiles;
  healthProbeBindAddress: string;
  kcpBaseUrl: string | undefined;
}

export function parseFlags(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): WebhookFlags | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        kubeconfig: { type: "string" },
        "api-export-name": { type: "string", default: DEFAULT_EXPORT_NAME },
        "bind-address": { type: "string", default: "0.0.0.0" },
        "webhook-port": { type: "string", default: "9443" },
        "tls-cert-file": { type: "string" },
        "tls-key-file": { type: "string" },
        "tls-cert-dir": { type: "string", default: "/etc/webhook-tls" },
        "health-probe-bind-address": { type: "string", default: ":8081" },
        "kcp-base-url": { type: "string" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (see --help)`);
  }
  if (values.help) return "help";
  const port = Number(values["webhook-port"]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--webhook-port ${JSON.stringify(values["webhook-port"])} is not a port number`);
  }
  const certFile = values["tls-cert-file"];
  const keyFile = values["tls-key-file"];
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new UsageError("--tls-cert-file and --tls-key-file must be given together");
  }
  const dir = values["tls-cert-dir"];
  const tls =
    certFile && keyFile ? { certFile, keyFile } : { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") };
  try {
    parseListenAddress(values["health-probe-bind-address"]);
  } catch (err) {
    throw new UsageError(`--health-probe-bind-address: ${(err as Error).message}`);
  }
  const kcpBaseUrl = values["kcp-base-url"];
  if (kcpBaseUrl !== undefined && !/^https?:\/\/[^/]+/.test(kcpBaseUrl)) {
    throw new UsageError(`--kcp-base-url ${JSON.stringify(kcpBaseUrl)} is not an http(s) URL`);
  }
  const kubeconfig = values.kubeconfig ?? (env["KUBECONFIG"] || undefined);
  if (kubeconfig === undefined) throw new UsageError("no kubeconfig: set --kubeconfig or $KUBECONFIG");
  return {
    kubeconfig,
    apiExportName: values["api-export-name"],
    bindAddress: values["bind-address"],
    webhookPort: port,
    tls,
    healthProbeBindAddress: values["health-probe-bind-address"],
    kcpBaseUrl: kcpBaseUrl?.replace(/\/+$/, ""),
  };
}

export interface RunningWebhook {
  webhookPort: number;
  healthPort: number;
  stop(): Promise<void>;
}

/** Starts everything; throws (with a one-line message) when the configuration or the environment is wrong. */
export async function startWebhook(flags: WebhookFlags, logger: Logger): Promise<RunningWebhook> {
  loadKeyPair(flags.tls); // fail before talking to kcp when the certificate is missing or broken
  const conn = loadKcpConnection({ kubeconfig: flags.kubeconfig, requireWorkspace: true });
  const stopAll: (() => unknown)[] = [() => conn.base.close()];
  try {
    let urls: string[];
    try {
      urls = await checkEndpointSlice(conn.workspaceClient, flags.apiExportName, conn.workspace);
    } catch (err) {
      if (isApiError(err)) throw new Error(`cannot read APIExportEndpointSlices in ${conn.workspace}: ${err.message}`);
      throw err;
    }
    if (urls.length === 0) logger.warn(NO_ENDPOINTS_HINT);

    const metricsRegistry = new Registry();
    collectDefaultMetrics({ register: metricsRegistry });
    const metrics = createWebhookMetrics(metricsRegistry);
    const resolver = new WorkspaceResolver({ base: conn.base });
    // The source registers its change callback when it builds its watch, right below.
    let onRulesChanged = (): void => undefined;
    const rules = new ExportWatch<DependencyRule>({
      exportWorkspace: conn.workspaceClient,
      exportName: flags.apiExportName,
      resourcePath: RULES_PATH,
      logger: logger.child({ part: "rules" }),
      onChange: () => onRulesChanged(),
    });
    const source = new RuleSource({
      watch: (onChange) => {
        onRulesChanged = onChange;
        return rules;
      },
      resolver,
      logger: logger.child({ part: "registry" }),
      metrics,
    });
    source.start();
    stopAll.push(() => source.stop());

    const lookupBase = flags.kcpBaseUrl ? conn.base.withBase(flags.kcpBaseUrl) : conn.base;
    const handler = createAdmissionHandler({
      registry: () => source.current(),
      finder: new LiveDependentFinder({ base: lookupBase }),
      logger: logger.child({ part: "admission" }),
      metrics,
    });
    // Rule checks read providers' exports through the dep-ctrl export's virtual workspace (their consent: the claims).
    const ruleHandler = createRuleAdmissionHandler({
      deps: {
        resolve: (path) => resolver.resolve(path),
        fetchExport: (cluster, exportName, resources) =>
          fetchExportFacts((endpoint, c, p) => rules.clientFor(endpoint, c).get(p), rules.endpoints(), false, {
            cluster,
            exportName,
            resources,
          }),
      },
      logger: logger.child({ part: "rule-admission" }),
      metrics,
    });
    const server = await startWebhookServer({
      host: flags.bindAddress,
      port: flags.webhookPort,
      tls: flags.tls,
      handler,
      ruleHandler,
      logger,
      metrics,
    });
    stopAll.push(() => server.close());
    const health = await startHealthServer(flags.healthProbeBindAddress, metricsRegistry, {
      "registry-synced": () => source.notReadyReason(),
    });
    stopAll.push(() => health.close());
    return {
      webhookPort: server.port,
      healthPort: health.port,
      stop: () => stopEverything(stopAll),
    };
  } catch (err) {
    await stopEverything(stopAll);
    throw err;
  }
}

async function stopEverything(steps: (() => unknown)[]): Promise<void> {
  // Reverse order: stop taking requests first, close the kcp connections last.
  for (const step of [...steps].reverse()) await step();
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the one-line errors and --help go (default: the process's streams). */
  stdout?: (line: string) => void;
  stderr?: (line: string) => void;
  /** Stops the webhook when aborted; default: SIGTERM or SIGINT. */
  shutdown?: AbortSignal;
  logger?: Logger;
  /** Called once serving (tests read the ports). */
  onStarted?: (running: RunningWebhook) => void;
}

/** The program: returns the exit code. Startup errors are one line on stderr, without a stack trace. */
export async function run(argv: readonly string[], opts: RunOptions = {}): Promise<number> {
  const stdout = opts.stdout ?? ((line: string) => process.stdout.write(line));
  const stderr = opts.stderr ?? ((line: string) => process.stderr.write(line));
  let running: RunningWebhook;
  try {
    const flags = parseFlags(argv, opts.env ?? process.env);
    if (flags === "help") {
      stdout(USAGE);
      return 0;
    }
    running = await startWebhook(flags, opts.logger ?? createLogger("dependency-webhook"));
  } catch (err) {
    stderr(`dependency-webhook: ${oneLine(err)}\n`);
    return 1;
  }
  opts.onStarted?.(running);
  await waitForShutdown(opts.shutdown);
  await running.stop();
  return 0;
}

function oneLine(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === "ECONNREFUSED" || e?.code === "ENOTFOUND") return `cannot reach kcp: ${e.message}`;
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, " ");
}

function waitForShutdown(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal) {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
      return;
    }
    const done = () => {
      process.off("SIGTERM", done);
      process.off("SIGINT", done);
      resolve();
    };
    process.once("SIGTERM", done);
    process.once("SIGINT", done);
  });
}

const isMain = import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url);
if (isMain) {
  process.exitCode = await run(process.argv.slice(2));
}
