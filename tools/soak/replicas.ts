// The processes the soak kills and restarts: the webhook replicas (each on a port of its own, behind the proxy) and
// the controller, each supervised so that every exit is recorded with whether we caused it.
import path from "node:path";
import { REPO_ROOT } from "../kcp/harness.ts";
import { virtualWorkspaceOriginArgs } from "../kcp/binaries.ts";
import { ManagedProcess, freePort } from "../kcp/process.ts";
import type { ShardedKcp } from "../kcp/sharded.ts";
import { Binaries, IDENTITIES, PATHS, waitReady, type BinaryProcess, type LookupMode } from "../kcp/topology.ts";
import type { ProcessExit } from "./history.ts";
import { RoundRobinProxy } from "./proxy.ts";
import { SOAK_INDEX_BUDGET } from "./tenants.ts";

/** A restartable process with its exits recorded; `expectExit` marks the next exit as one we caused. */
export class Supervised {
  readonly name: string;
  private readonly startFn: () => Promise<BinaryProcess>;
  current: BinaryProcess | undefined;
  private expected = false;
  private readonly exits: ProcessExit[];

  constructor(name: string, exits: ProcessExit[], start: () => Promise<BinaryProcess>) {
    this.name = name;
    this.exits = exits;
    this.startFn = start;
  }

  async start(): Promise<void> {
    this.expected = false;
    const p = await this.startFn();
    this.current = p;
    void p.proc.wait().then((code) => {
      this.exits.push({ process: this.name, at: Date.now(), code, expected: this.expected });
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (signal === "SIGKILL" || signal === "SIGTERM") this.expected = true;
    this.current?.proc.killGroup(signal);
  }

  async stop(): Promise<void> {
    this.expected = true;
    await this.current?.proc.stop(5000);
  }
}

export /** One webhook replica from src/cmd/webhook.ts, as Binaries.startWebhook runs it, on a port of its own, with the
 * soak's smaller index budget (tenants.ts). */
async function startWebhookReplica(bins: Binaries, rootDir: string, port: number, i: number): Promise<BinaryProcess> {
  const health = await freePort();
  const kubeconfig = bins.env.kubeconfigFor(IDENTITIES.webhook.token, PATHS.depCtrl, "webhook-soak.kubeconfig");
  const proc = new ManagedProcess(
    process.execPath,
    [
      path.join(REPO_ROOT, "src/cmd/webhook.ts"),
      `--kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      `--webhook-port=${port}`,
      `--tls-cert-file=${bins.certs.cert}`,
      `--tls-key-file=${bins.certs.key}`,
      `--health-probe-bind-address=127.0.0.1:${health}`,
      `--lookup=${bins.lookup}`,
      ...(await virtualWorkspaceOriginArgs(bins.env)),
      // Index mode only: the live lookup keeps no index, so it has no budget.
      ...(bins.lookup === "index"
        ? [`--index-max-objects-per-workspace=${SOAK_INDEX_BUDGET.maxObjectsPerWorkspace}`]
        : []),
    ],
    path.join(rootDir, `webhook-${i}.log`),
  );
  const p = { proc, healthUrl: `http://127.0.0.1:${health}` };
  await waitReady(`webhook-${i}`, p, 120_000); // the index may take up to 60 s after the rules
  return p;
}

/** The webhook replicas behind the round-robin proxy (the one URL the controller writes into every VWC), and the
 * controller; all started. */
export async function startProcesses(
  kcp: ShardedKcp,
  lookup: LookupMode,
  log: (line: string) => void,
): Promise<{
  bins: Binaries;
  exits: ProcessExit[];
  webhookPorts: number[];
  webhooks: Supervised[];
  proxy: RoundRobinProxy;
  controller: Supervised;
}> {
  const bins = new Binaries(kcp, lookup);
  const exits: ProcessExit[] = [];
  const webhookPorts = [await freePort(), await freePort()];
  const webhooks = webhookPorts.map(
    (port, i) => new Supervised(`webhook-${i}`, exits, () => startWebhookReplica(bins, kcp.rootDir, port, i)),
  );
  const proxy = new RoundRobinProxy(webhookPorts);
  const proxyPort = await proxy.listen();
  log(`two webhook replicas on :${webhookPorts.join(" and :")}, behind the proxy on :${proxyPort}`);
  for (const w of webhooks) await w.start();
  const controller = new Supervised("controller", exits, () =>
    bins.startController({ webhookUrl: `https://127.0.0.1:${proxyPort}` }),
  );
  await controller.start();
  return { bins, exits, webhookPorts, webhooks, proxy, controller };
}
