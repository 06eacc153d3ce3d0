// The controller binary: turns DependencyRules into ValidatingWebhookConfigurations in provider workspaces.
// Usage: node src/cmd/controller.ts --kubeconfig=<dep-ctrl kubeconfig> --webhook-url=https://webhook:9443 [flags]
import { DEFAULT_EXPORT_NAME } from "../api/types.ts";
import { startController, type ControllerConfig } from "../controller/runtime.ts";
import { createLogger } from "../observability/logger.ts";
import { parse, readFlags, runCommand, usage, UsageError } from "../cli/kit.ts";
import type { Command, Flag, RunOptions } from "../cli/kit.ts";
import { ALLOW_INSECURE_KCP, parseAllowInsecureKcp } from "./kcp-flags.ts";

const FLAGS: Flag[] = [
  { name: "kubeconfig", env: "KUBECONFIG", arg: "PATH", help: "kubeconfig whose server is the dep-ctrl workspace" },
  {
    name: "api-export-name",
    env: "API_EXPORT_NAME",
    arg: "NAME",
    default: DEFAULT_EXPORT_NAME,
    help: "APIExport serving DependencyRules",
  },
  {
    name: "webhook-url",
    env: "WEBHOOK_URL",
    arg: "URL",
    help: "https base URL of the webhook; /validate/<cluster> is appended",
  },
  {
    name: "webhook-ca-bundle-file",
    env: "WEBHOOK_CA_BUNDLE_FILE",
    arg: "PATH",
    help: "PEM CA bundle kcp uses to verify the webhook; re-read every pass",
  },
  {
    name: "health-probe-bind-address",
    env: "HEALTH_PROBE_BIND_ADDRESS",
    arg: "ADDR",
    default: ":8081",
    help: "/healthz /readyz /metrics listener",
  },
  { name: "leader-elect", env: "LEADER_ELECT", arg: "BOOL", default: "true", help: "elect a leader through a Lease" },
  {
    name: "leader-election-name",
    env: "LEADER_ELECTION_NAME",
    arg: "NAME",
    default: "kcp-dependency-controller",
    help: "Lease name",
  },
  {
    name: "leader-election-namespace",
    env: "LEADER_ELECTION_NAMESPACE",
    arg: "NS",
    default: "default",
    help: "Lease namespace in the dep-ctrl workspace",
  },
  {
    name: "resync-period",
    env: "RESYNC_PERIOD",
    arg: "DURATION",
    default: "30s",
    help: "full reconcile at least this often, e.g. 30s, 2m",
  },
  {
    name: "validate-rules",
    env: "VALIDATE_RULES",
    arg: "BOOL",
    default: "true",
    help: "configure the webhook to refuse invalid DependencyRules at apply time",
  },
  ALLOW_INSECURE_KCP,
];

export const USAGE = usage(
  "controller",
  "Installs a ValidatingWebhookConfiguration in every workspace whose resources a DependencyRule protects.",
  FLAGS,
);

/** Flags win over environment variables. Throws UsageError with a one-line message. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ControllerConfig | "help" {
  const v = readFlags(FLAGS, argv, env);
  if (v === "help") return "help";
  const webhookUrl = parse.required(
    v["webhook-url"],
    "webhook-url",
    "the webhook's https base URL, e.g. https://webhook.example:9443",
  );
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
  const kubeconfig = v["kubeconfig"];
  const caBundleFile = v["webhook-ca-bundle-file"];
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    apiExportName: v["api-export-name"]!,
    webhookUrl: webhookUrl.replace(/\/+$/, ""),
    ...(caBundleFile ? { caBundleFile } : {}),
    healthAddress: parse.listen(v["health-probe-bind-address"]!, "health-probe-bind-address"),
    leaderElect: parse.bool(v["leader-elect"]!, "leader-elect"),
    leaseName: v["leader-election-name"]!,
    leaseNamespace: v["leader-election-namespace"]!,
    resyncMs: parse.duration(v["resync-period"]!, "resync-period"),
    validateRules: parse.bool(v["validate-rules"]!, "validate-rules"),
    ...parseAllowInsecureKcp(v),
  };
}

export const command: Command<ControllerConfig> = {
  name: "controller",
  usage: USAGE,
  parse: parseConfig,
  logger: () => createLogger("controller"),
  async start(config, logger) {
    const running = await startController(config, logger);
    return { ports: { health: running.healthPort }, stop: () => running.stop() };
  },
};

/** Runs the controller until the signal (SIGTERM/SIGINT, or `opts.signal`); resolves to the exit code. */
export function run(argv: readonly string[], opts: RunOptions = {}): Promise<number> {
  return runCommand(command, argv, opts);
}

if (import.meta.main) {
  // Exit explicitly: a stuck socket must not keep a stopped controller alive.
  process.exit(await run(process.argv.slice(2)));
}
