// The dependency-webhook binary: flags, then src/webhook/runtime.ts until SIGTERM/SIGINT; `run(argv)` is the whole
// program, so tests can start it in-process.
import { join } from "node:path";
import { DEFAULT_EXPORT_NAME } from "../api/types.ts";
import { createLogger } from "../observability/logger.ts";
import { startWebhook, type WebhookConfig } from "../webhook/runtime.ts";
import { DEFAULT_LIMITS, type TransportLimits } from "../webhook/http/limits.ts";
import { indexBudgetFlags, parseIndexBudget } from "./index-budget-flags.ts";
import { MAX_RULES_FLAG, parseMaxRules } from "./rule-cap-flag.ts";
import {
  ALLOW_INSECURE_KCP,
  parseAllowInsecureKcp,
  parseVirtualWorkspaceOrigins,
  requireHttps,
  VIRTUAL_WORKSPACE_ORIGINS,
} from "./kcp-flags.ts";
import { parse, readFlags, runCommand, usage, UsageError } from "../cli/kit.ts";
import type { Command, Flag, RunOptions } from "../cli/kit.ts";

const FLAGS: Flag[] = [
  {
    name: "kubeconfig",
    env: "KUBECONFIG",
    arg: "PATH",
    help: "kubeconfig pointing at the dep-ctrl workspace (server .../clusters/<path>)",
  },
  {
    name: "api-export-name",
    env: "API_EXPORT_NAME",
    arg: "NAME",
    default: DEFAULT_EXPORT_NAME,
    help: "APIExport serving DependencyRules",
  },
  {
    name: "bind-address",
    env: "BIND_ADDRESS",
    arg: "ADDR",
    default: "0.0.0.0",
    help: "address the webhook listens on",
  },
  { name: "webhook-port", env: "WEBHOOK_PORT", arg: "PORT", default: "9443", help: "HTTPS port of the webhook" },
  {
    name: "tls-cert-file",
    env: "TLS_CERT_FILE",
    arg: "PATH",
    help: "serving certificate (PEM); reloaded when it changes",
  },
  { name: "tls-key-file", env: "TLS_KEY_FILE", arg: "PATH", help: "serving key (PEM); reloaded when it changes" },
  {
    name: "tls-cert-dir",
    env: "TLS_CERT_DIR",
    arg: "DIR",
    default: "/etc/webhook-tls",
    help: "directory with tls.crt and tls.key, used when the two flags above are not set",
  },
  {
    name: "health-probe-bind-address",
    env: "HEALTH_PROBE_BIND_ADDRESS",
    arg: "ADDR",
    default: ":8081",
    help: "plain HTTP /healthz, /readyz and /metrics",
  },
  {
    name: "client-ca-file",
    env: "CLIENT_CA_FILE",
    arg: "PATH",
    help: "require callers to present a certificate from these CAs (PEM; reloaded); others get 401",
  },
  {
    name: "allowed-client-subjects",
    env: "ALLOWED_CLIENT_SUBJECTS",
    arg: "LIST",
    help: "with --client-ca-file: comma-separated CN=<name>, O=<org> or DNS=<name> callers may have",
  },
  { name: "tls-min-version", env: "TLS_MIN_VERSION", arg: "1.2|1.3", default: "1.2", help: "lowest TLS version" },
  {
    name: "tls-cipher-suites",
    env: "TLS_CIPHER_SUITES",
    arg: "LIST",
    help: "OpenSSL cipher list for TLS 1.2 (default Node's)",
  },
  {
    name: "lookup",
    env: "LOOKUP",
    arg: "auto|index|live",
    default: "auto",
    help: "index: watch dependents through each provider's APIExport virtual workspace (provider consent, deploy/rbac/provider-index.yaml); live: list them on every DELETE (per-shard grant, deploy/rbac/system-admin.yaml); auto: the index where the provider consented, else a live list where the grant is held",
  },
  {
    name: "legacy-validate-route",
    env: "LEGACY_VALIDATE_ROUTE",
    arg: "true|false",
    default: "false",
    help: "also serve the Go original's /validate (no provider in the URL: matches every provider's rules; for migrations only)",
  },
  {
    name: "enforce-unverified-rules",
    env: "ENFORCE_UNVERIFIED_RULES",
    arg: "true|false",
    default: "false",
    help: "enforce DependencyRules whose own workspace declined the read-only claims (never checked); off: such rules protect nothing and say so on their status",
  },
  MAX_RULES_FLAG,
  {
    name: "kcp-base-url",
    env: "KCP_BASE_URL",
    arg: "URL",
    help: "where dependents are listed (default: the kubeconfig server without /clusters/...)",
  },
  VIRTUAL_WORKSPACE_ORIGINS,
  ALLOW_INSECURE_KCP,
  ...limitFlags(),
  ...indexBudgetFlags(),
];

/** The transport's limits (src/webhook/http/limits.ts says why each default). */
function limitFlags(): Flag[] {
  const d = DEFAULT_LIMITS;
  const count = (name: string, env: string, n: number, help: string): Flag => ({
    name,
    env,
    arg: "N",
    default: String(n),
    help,
  });
  return [
    count("max-concurrent-reviews", "MAX_CONCURRENT_REVIEWS", d.maxConcurrentReviews, "DELETE reviews decided at once"),
    count(
      "max-concurrent-rule-reviews",
      "MAX_CONCURRENT_RULE_REVIEWS",
      d.maxConcurrentRuleReviews,
      "DependencyRule reviews decided at once, apart from DELETE reviews",
    ),
    count("max-queued-reviews", "MAX_QUEUED_REVIEWS", d.maxQueuedReviews, "reviews waiting for a slot, per pool"),
    count("max-connections", "MAX_CONNECTIONS", d.maxConnections, "open TLS connections served"),
    {
      name: "body-timeout",
      env: "BODY_TIMEOUT",
      arg: "DURATION",
      default: `${d.bodyTimeoutMs / 1000}s`,
      help: "time a request body has to arrive whole",
    },
    count(
      "min-body-bytes-per-second",
      "MIN_BODY_BYTES_PER_SECOND",
      d.minBodyBytesPerSecond,
      "average pace a body must keep after its first 2 s",
    ),
  ];
}

/** Positive whole numbers and the body deadline, from their flags. */
function parseLimits(v: Record<string, string | undefined>): TransportLimits {
  const count = (flag: string): number => {
    const text = v[flag] ?? "";
    if (!/^[1-9]\d{0,8}$/.test(text)) throw new UsageError(`--${flag}: want a positive whole number, got "${text}"`);
    return Number(text);
  };
  return {
    maxConcurrentReviews: count("max-concurrent-reviews"),
    maxConcurrentRuleReviews: count("max-concurrent-rule-reviews"),
    maxQueuedReviews: count("max-queued-reviews"),
    maxConnections: count("max-connections"),
    bodyTimeoutMs: parse.duration(v["body-timeout"]!, "body-timeout"),
    minBodyBytesPerSecond: count("min-body-bytes-per-second"),
  };
}

export const USAGE = usage(
  "dependency-webhook",
  "Admission webhook denying DELETEs of objects still referenced by dependents (DependencyRules).",
  FLAGS,
);

/** Flags win over environment variables. Throws UsageError with a one-line message. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): WebhookConfig | "help" {
  const v = readFlags(FLAGS, argv, env);
  if (v === "help") return "help";
  const certFile = v["tls-cert-file"];
  const keyFile = v["tls-key-file"];
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new UsageError("--tls-cert-file and --tls-key-file must be given together");
  const dir = v["tls-cert-dir"]!;
  const tls =
    certFile && keyFile ? { certFile, keyFile } : { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") };
  const kcpBaseUrl = v["kcp-base-url"];
  if (kcpBaseUrl !== undefined && !/^https?:\/\/[^/]+/.test(kcpBaseUrl))
    throw new UsageError(`--kcp-base-url ${JSON.stringify(kcpBaseUrl)} is not an http(s) URL`);
  const insecure = parseAllowInsecureKcp(v);
  requireHttps(kcpBaseUrl, "kcp-base-url", insecure.allowInsecureKcp === true);
  const kubeconfig = v["kubeconfig"];
  if (kubeconfig === undefined) throw new UsageError("no kubeconfig: set --kubeconfig or $KUBECONFIG");
  const clientCAFile = v["client-ca-file"];
  const subjects = (v["allowed-client-subjects"] ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
  if (subjects.length > 0 && !clientCAFile)
    throw new UsageError("--allowed-client-subjects needs --client-ca-file (whose certificates to check)");
  for (const subject of subjects)
    if (!/^(CN|O|DNS)=.+$/.test(subject))
      throw new UsageError(`--allowed-client-subjects: ${JSON.stringify(subject)} is not CN=..., O=... or DNS=...`);
  const minVersion = v["tls-min-version"];
  if (minVersion !== "1.2" && minVersion !== "1.3")
    throw new UsageError(`--tls-min-version: want 1.2 or 1.3, got ${JSON.stringify(minVersion)}`);
  const legacy = parse.bool(v["legacy-validate-route"]!, "legacy-validate-route");
  const unverified = parse.bool(v["enforce-unverified-rules"]!, "enforce-unverified-rules");
  const lookup = v["lookup"];
  if (lookup !== "auto" && lookup !== "index" && lookup !== "live")
    throw new UsageError(`--lookup: want auto, index or live, got ${JSON.stringify(lookup)}`);
  return {
    kubeconfig,
    lookup,
    ...(legacy ? { legacyValidateRoute: true } : {}),
    ...(unverified ? { enforceUnverifiedRules: true } : {}),
    ...(clientCAFile ? { clientCAFile, allowedClientSubjects: subjects } : {}),
    minTLSVersion: minVersion === "1.3" ? "TLSv1.3" : "TLSv1.2",
    ...(v["tls-cipher-suites"] ? { cipherSuites: v["tls-cipher-suites"] } : {}),
    apiExportName: v["api-export-name"]!,
    bindAddress: v["bind-address"]!,
    webhookPort: parse.port(v["webhook-port"]!, "webhook-port"),
    tls,
    healthProbeBindAddress: parse.listen(v["health-probe-bind-address"]!, "health-probe-bind-address"),
    kcpBaseUrl: kcpBaseUrl?.replace(/\/+$/, ""),
    limits: parseLimits(v),
    ...parseIndexBudget(v),
    ...parseMaxRules(v),
    ...parseVirtualWorkspaceOrigins(v),
    ...insecure,
  };
}

export const command: Command<WebhookConfig> = {
  name: "dependency-webhook",
  usage: USAGE,
  parse: parseConfig,
  logger: () => createLogger("dependency-webhook"),
  async start(config, logger) {
    const running = await startWebhook(config, logger);
    return { ports: { webhook: running.webhookPort, health: running.healthPort }, stop: () => running.stop() };
  },
};

/** Runs the webhook until the signal (SIGTERM/SIGINT, or `opts.signal`); resolves to the exit code. */
export function run(argv: readonly string[], opts: RunOptions = {}): Promise<number> {
  return runCommand(command, argv, opts);
}

if (import.meta.main) process.exit(await run(process.argv.slice(2)));
