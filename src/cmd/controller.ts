// The controller binary: turns DependencyRules into ValidatingWebhookConfigurations in provider workspaces.
// Usage: node src/cmd/controller.ts --kubeconfig=<dep-ctrl kubeconfig> --webhook-url=https://webhook:9443 [flags]
import { MAX_RULES_FLAG, parseMaxRules } from "./rule-cap-flag.ts";
import { DEFAULT_EXPORT_NAME } from "../api/types.ts";
import { startController, type ControllerConfig } from "../controller/runtime.ts";
import type { ProviderInitializerConfig } from "../controller/initializer-wiring.ts";
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
  {
    name: "provider-workspace-type",
    env: "PROVIDER_WORKSPACE_TYPE",
    arg: "PATH:NAME",
    help: "serve the initializer of this WorkspaceType (e.g. root:dependency-provider): bind the dep-ctrl export with every claim accepted and write the index consent in each new workspace of it; needs --webhook-user",
  },
  {
    name: "webhook-user",
    env: "WEBHOOK_USER",
    arg: "NAME",
    help: "the webhook's user name in kcp, granted the index consent in each workspace --provider-workspace-type sets up",
  },
  MAX_RULES_FLAG,
  ALLOW_INSECURE_KCP,
];

/** --provider-workspace-type and --webhook-user, which come together. */
function parseInitializer(v: Record<string, string | undefined>): ProviderInitializerConfig {
  const type = v["provider-workspace-type"];
  const webhookUser = v["webhook-user"];
  if (!type) return {};
  const m = /^(root(?::[a-z0-9]([-a-z0-9]*[a-z0-9])?)*):([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(type);
  if (!m)
    throw new UsageError(
      `--provider-workspace-type: want <workspace path>:<name>, e.g. root:dependency-provider, got "${type}"`,
    );
  if (!webhookUser) throw new UsageError("--provider-workspace-type needs --webhook-user (the index consent names it)");
  return {
    providerWorkspaceType: { path: m[1]!, name: m[3]! },
    webhookUser,
  };
}

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
    ...parseMaxRules(v),
    ...parseAllowInsecureKcp(v),
    ...parseInitializer(v),
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
