// The controller and the webhook as child processes with their own identities and a throwaway serving CA, and how to
// tell they are ready (or, in index mode, indexed).
import path from "node:path";
import { makeCerts, type CertFiles } from "./certs.ts";
import { REPO_ROOT, type TokenUser } from "./harness.ts";
import { IDENTITIES, PATHS, type KcpEnv, type LookupMode } from "./layout.ts";
import { ManagedProcess, freePort, waitFor } from "./process.ts";

export interface BinaryProcess {
  proc: ManagedProcess;
  healthUrl: string;
}

/**
 * Where the binaries start from: `src` runs the TypeScript entry points as a developer does (Node strips the types at
 * load); `dist` runs the compiled JavaScript the container image ships (`npm run build`, then
 * `node --enable-source-maps <NODE_FLAGS> dist/cmd/<name>.js`, the Dockerfile's command). Behaviour is the same;
 * memory is not, so the benchmark measures `dist`.
 */
export type BinariesFrom = "src" | "dist";

/**
 * The V8 flags every start of the binaries carries: the image's command (Dockerfile, chart; test/unit/image.test.ts
 * and chart.test.ts hold them to this), this launcher, and so the demo, the tests, the benchmark and the soak. Left to
 * itself, Node 24 on a large machine grows the young generation to 128 MiB under a burst of large watch events (a
 * hostile consumer's 1 MiB references) and keeps those pages resident long after the heap is empty again: +125 MiB
 * of RSS in a 300-event burst against +15 MiB with 4 MiB semi-spaces (docs/operations.md, "Sizing the webhook").
 */
export const NODE_FLAGS = ["--max-semi-space-size=4"] as const;

/** A binary's command in the image: the Dockerfile's ENTRYPOINT (controller) and the chart's `command`. */
export const imageCommand = (name: "webhook" | "controller"): string[] => [
  "node",
  "--enable-source-maps",
  ...NODE_FLAGS,
  `/app/dist/cmd/${name}.js`,
];

/**
 * The webhook's --virtual-workspace-origins on a multi-shard kcp: every shard's virtual-workspace origin, read from
 * kcp's Shard objects. The index follows a provider's endpoint on a shard only when its origin is known, and it learns
 * origins by itself only from the dep-ctrl export's endpoints, which name just the shards a dep-ctrl binding lives on
 * (the topology binds it on the root shard; consumer2 on shard-1 binds only the providers' exports). As an operator of
 * such a kcp would, the harness names them all. A single shard needs nothing: the dep-ctrl export's endpoint names it.
 */
export async function virtualWorkspaceOriginArgs(env: KcpEnv): Promise<string[]> {
  if (env.shardAdmins.length < 2) return [];
  const shards = await env.admin.listAll<{ spec?: { virtualWorkspaceURL?: string } }>(
    "/clusters/root/apis/core.kcp.io/v1alpha1/shards",
  );
  const origins = shards.items.flatMap((s) =>
    s.spec?.virtualWorkspaceURL ? [new URL(s.spec.virtualWorkspaceURL).origin] : [],
  );
  return origins.length > 0 ? [`--virtual-workspace-origins=${[...new Set(origins)].join(",")}`] : [];
}

function entryPoint(from: BinariesFrom, name: "webhook" | "controller"): string[] {
  return from === "dist"
    ? ["--enable-source-maps", ...NODE_FLAGS, path.join(REPO_ROOT, `dist/cmd/${name}.js`)]
    : [...NODE_FLAGS, path.join(REPO_ROOT, `src/cmd/${name}.ts`)];
}

/** The controller and the webhook as child processes, started from the same entry points a user runs. */
export class Binaries {
  readonly env: KcpEnv;
  readonly certs: CertFiles;
  webhookPort = 0;
  webhook: BinaryProcess | undefined;
  controller: BinaryProcess | undefined;
  /** The webhook's --lookup at its next start; the topology must have granted that mode's reads (auto: either). */
  lookup: LookupMode | "auto";
  /** More controller flags at its next start, e.g. `--resync-period=2s` (they come last, so they win). */
  controllerArgs: string[] = [];
  /** More webhook flags at its next start, e.g. `--index-memory-limit=4Mi` (they come last, so they win). */
  webhookArgs: string[] = [];
  readonly from: BinariesFrom;

  constructor(env: KcpEnv, lookup: LookupMode | "auto" = "index", from: BinariesFrom = "src") {
    this.env = env;
    this.lookup = lookup;
    this.from = from;
    this.certs = makeCerts(path.join(env.rootDir, "webhook-tls"));
  }

  get webhookUrl(): string {
    return `https://127.0.0.1:${this.webhookPort}`;
  }

  async startWebhook(opts: { waitReady?: boolean; identity?: TokenUser } = {}): Promise<BinaryProcess> {
    if (!this.webhookPort) this.webhookPort = await freePort();
    const health = await freePort();
    const token = (opts.identity ?? IDENTITIES.webhook).token;
    const kubeconfig = this.env.kubeconfigFor(token, PATHS.depCtrl, `webhook-${token}.kubeconfig`);
    const proc = new ManagedProcess(
      process.execPath,
      [
        ...entryPoint(this.from, "webhook"),
        `--kubeconfig=${kubeconfig}`,
        "--bind-address=127.0.0.1",
        `--webhook-port=${this.webhookPort}`,
        `--tls-cert-file=${this.certs.cert}`,
        `--tls-key-file=${this.certs.key}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        `--lookup=${this.lookup}`,
        ...(await virtualWorkspaceOriginArgs(this.env)),
        ...this.webhookArgs,
      ],
      path.join(this.env.rootDir, "webhook.log"),
    );
    this.webhook = { proc, healthUrl: `http://127.0.0.1:${health}` };
    // Readiness may wait up to 60 s for the index after the rules (src/webhook/deletion/index/readiness.ts).
    if (opts.waitReady !== false) await waitReady("webhook", this.webhook, 120_000);
    return this.webhook;
  }

  /** `env` adds to this process's environment (e.g. a test hook's variable). */
  async startController(
    opts: { webhookUrl?: string; caFile?: string; env?: NodeJS.ProcessEnv } = {},
  ): Promise<BinaryProcess> {
    const health = await freePort();
    const kubeconfig = this.env.kubeconfigFor(IDENTITIES.controller.token, PATHS.depCtrl, "controller.kubeconfig");
    const proc = new ManagedProcess(
      process.execPath,
      [
        ...entryPoint(this.from, "controller"),
        `--kubeconfig=${kubeconfig}`,
        `--webhook-url=${opts.webhookUrl ?? this.webhookUrl}`,
        `--webhook-ca-bundle-file=${opts.caFile ?? this.certs.caCert}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        ...this.controllerArgs,
      ],
      path.join(this.env.rootDir, "controller.log"),
      opts.env ? { env: { ...process.env, ...opts.env } } : {},
    );
    this.controller = { proc, healthUrl: `http://127.0.0.1:${health}` };
    await waitReady("controller", this.controller);
    return this.controller;
  }

  async stop(): Promise<void> {
    await Promise.all([this.controller?.proc.stop(), this.webhook?.proc.stop()]);
  }

  logTails(lines = 40): string {
    return [
      `--- controller log ---\n${this.controller?.proc.logTail(lines) ?? "(not started)"}`,
      `--- webhook log ---\n${this.webhook?.proc.logTail(lines) ?? "(not started)"}`,
    ].join("\n");
  }
}

export async function waitReady(name: string, p: BinaryProcess, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${name} /readyz`,
    async () => {
      if (!p.proc.running) throw new Error(`${name} exited with code ${p.proc.exitCode}:\n${p.proc.logTail(20)}`);
      const res = await fetch(`${p.healthUrl}/readyz`).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** One series of a binary's /metrics, e.g. `dependency_webhook_index_types{state="ready"}`; undefined if absent. */
export async function scrapeSeries(p: BinaryProcess, series: string): Promise<number | undefined> {
  const res = await fetch(`${p.healthUrl}/metrics`).catch(() => undefined);
  if (!res?.ok) return undefined;
  const line = (await res.text()).split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The sum of all series of a counter on a binary's /metrics (0 while it has none), e.g. writes by any action. */
export async function scrapeCounter(p: BinaryProcess, name: string): Promise<number> {
  const res = await fetch(`${p.healthUrl}/metrics`);
  if (!res.ok) throw new Error(`${p.healthUrl}/metrics: ${res.status}`);
  const text = await res.text();
  // A misspelt name would read 0 forever: the counter must be declared even while it has no series.
  if (!text.includes(`# TYPE ${name} counter`)) throw new Error(`${p.healthUrl}/metrics declares no counter ${name}`);
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/**
 * Waits until a webhook in index mode has every dependent type it watches ready (none syncing or failing). Readiness
 * does not wait for a failing type (e.g. a grant given after the rules synced), nor past its 60 s grace.
 */
export async function waitIndexed(name: string, p: BinaryProcess, timeoutMs = 60_000): Promise<void> {
  const types = (state: string) => scrapeSeries(p, `dependency_webhook_index_types{state="${state}"}`);
  await waitFor(
    `${name} index ready`,
    async () =>
      (((await types("ready")) ?? 0) > 0 && (await types("syncing")) === 0 && (await types("failing")) === 0) ||
      undefined,
    { timeoutMs, intervalMs: 200 },
  );
}
