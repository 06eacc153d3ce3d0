// The benchmark's world: a real single-shard kcp started by the test harness, the product topology, the controller
// and the webhook as child processes with their own identities (exactly as the e2e suite runs them), the VM rule,
// and a small probe (a VPC referenced by a VM) used to tell when protection is on or off.
import { loadKcpConnection } from "../src/kcp/kubeconfig.ts";
import { isApiError, type RestClient } from "../src/kcp/rest.ts";
import { apply } from "../tools/kcp/api.ts";
import { startKcp, type Kcp } from "../tools/kcp/harness.ts";
import { RULES, VPCS, VWC_PATH, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import {
  Binaries,
  IDENTITIES,
  PATHS,
  TOKENS,
  setupTopology,
  vmRule,
  type BinariesFrom,
  type LookupMode,
  type Topology,
} from "../tools/kcp/topology.ts";
import { createAll, ensureNamespace } from "./populate.ts";

export const PROBE_NS = "bench-probe";
export const PROBE_VPC = `${at(VPCS, PROBE_NS)}/probe-vpc`;

export interface BenchEnv {
  kcp: Kcp;
  topo: Topology;
  bins: Binaries;
  /** kcp-admin in root:consumer1, addressed by workspace path the way kubectl is: the client whose DELETEs we time. */
  consumer: RestClient;
  /** The webhook's own identity at the kcp base URL: lists through it take the webhook's exact path. */
  webhookIdentity: RestClient;
  /** Whether the VM rule is on (kept by setProtection): a webhook restarted in another mode must protect the probe. */
  protected: boolean;
  log: (line: string) => void;
}

export async function startBench(
  log: (line: string) => void,
  kcpArgs: string[] = [],
  lookup: LookupMode = "index",
  from: BinariesFrom = "src",
): Promise<BenchEnv> {
  log(`starting kcp (single shard: its own front door, no separate front-proxy) ${kcpArgs.join(" ")}`.trim());
  const kcp = await startKcp({ tokens: TOKENS, extraArgs: kcpArgs });
  try {
    // Both modes' read grants: the webhook runs in either mode on this kcp, and the bare LIST and the page-size probe
    // list consumer workspaces with the webhook's identity, which index mode alone does not allow.
    const topo = await setupTopology(kcp, { log: (l) => log(`  ${l}`), lookup: "both" });
    const bins = new Binaries(kcp, lookup, from);
    log(`starting the webhook (--lookup=${lookup}) and the controller as child processes, from ${from}/`);
    await bins.startWebhook();
    await bins.startController();
    const kubeconfig = kcp.kubeconfigFor(IDENTITIES.webhook.token, PATHS.depCtrl, "bench-webhook-identity.kubeconfig");
    const env: BenchEnv = {
      kcp,
      topo,
      bins,
      consumer: kcp.ws(PATHS.consumer1),
      webhookIdentity: loadKcpConnection({ kubeconfig }).base,
      protected: false,
      log,
    };
    await ensureNamespace(env.consumer, PROBE_NS);
    await createAll(env.consumer, [vpc("probe-vpc", PROBE_NS), vm("probe-vm", { vpc: "probe-vpc" }, PROBE_NS)]);
    await setProtection(env, true);
    return env;
  } catch (err) {
    await kcp.stop();
    throw err;
  }
}

export async function stopBench(env: BenchEnv): Promise<void> {
  env.webhookIdentity.close();
  await env.bins.stop();
  await env.kcp.stop();
}

/**
 * Turns protection on (apply the VM rule: the controller installs the VWC) or off (delete the rule: the controller
 * removes the VWC, the product's own path; stopping the controller and deleting the VWC by hand would be the same
 * request path for kcp). Waits until kcp's admission chain agrees, judged by a dry-run DELETE of the probe VPC.
 * Returns the milliseconds it took.
 */
export async function setProtection(env: BenchEnv, on: boolean): Promise<number> {
  const started = Date.now();
  const compute = env.kcp.ws(PATHS.compute);
  if (on) await apply(compute, vmRule(env.topo.vars));
  else await compute.request("DELETE", `${RULES}/vm-dependencies`).catch(ignore404);
  env.protected = on;
  const network = env.kcp.ws(PATHS.network);
  await waitFor(`the VWC to be ${on ? "installed" : "removed"}`, async () => {
    const present = (await network.getOptional(VWC_PATH)) !== undefined;
    return present === on || undefined;
  });
  await waitForProbe(env, on);
  return Date.now() - started;
}

/** Waits until a dry-run DELETE of the probe VPC is denied with 409 (`on`) or allowed. */
export async function waitForProbe(env: BenchEnv, on: boolean): Promise<void> {
  await waitFor(
    `the probe VPC to be ${on ? "protected" : "unprotected"}`,
    async () => {
      const r = await tryDelete(env.consumer, PROBE_VPC, { dryRun: true });
      return (on ? !r.allowed && r.status === 409 : r.allowed) || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
}

/**
 * Runs the webhook in `mode` (a no-op when it already does): stops the process and starts it again with the other
 * --lookup on the same port, so kcp and the controller stay as they are. With protection on, waits until the probe
 * VPC is denied again (index mode: the VM type is indexed). Returns the milliseconds it took.
 */
export async function useLookup(env: BenchEnv, mode: LookupMode): Promise<number> {
  if (env.bins.lookup === mode && env.bins.webhook?.proc.running) return 0;
  env.log(`switching the webhook to --lookup=${mode}`);
  return restartWebhook(env, mode);
}

/** Stops the webhook and starts it again in `mode` on the same port; waits as useLookup does. */
export async function restartWebhook(env: BenchEnv, mode: LookupMode): Promise<number> {
  const started = Date.now();
  env.bins.lookup = mode;
  await env.bins.webhook?.proc.stop();
  await env.bins.startWebhook();
  if (env.protected) await waitForProbe(env, true);
  return Date.now() - started;
}

function ignore404(err: unknown): void {
  if (!isApiError(err, 404)) throw err;
}
