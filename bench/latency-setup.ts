// The latency phase's two switches on its world: protection off and on without touching the rule, and the check that
// the webhook's index budget admits the largest N before any VM is created.
import { isApiError } from "../src/kcp/rest.ts";
import { DEFAULT_INDEX_BUDGET } from "../src/webhook/deletion/index/budget.ts";
import { VWC_PATH } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { PATHS } from "../tools/kcp/topology.ts";
import { waitForProbe, type BenchEnv } from "./env.ts";
import type { LatencyOptions } from "./latency.ts";

/**
 * Past its default budget (20,000 dependents of one type per workspace) index mode keeps the workspace's further VMs
 * unread and answers 503 for every VPC there, the probe's included: a run at such N measures nothing but refusals, so
 * it must raise the budget, and is told so before it spends half an hour creating VMs.
 */
export function checkIndexBudget(env: BenchEnv, opts: Pick<LatencyOptions, "ns" | "modes">): void {
  const vms = Math.max(0, ...opts.ns) + 2; // the fillers, zz-held-vm, and the probe's VM in the same workspace
  const raised = env.bins.webhookArgs.some((a) => a.startsWith("--index-max-objects-per-workspace="));
  if (!opts.modes.includes("index") || vms <= DEFAULT_INDEX_BUDGET.maxObjectsPerWorkspace || raised) return;
  throw new Error(
    `--n: ${vms} VMs in one workspace exceed the webhook's index budget ` +
      `(${DEFAULT_INDEX_BUDGET.maxObjectsPerWorkspace} dependents, ${DEFAULT_INDEX_BUDGET.maxBytesPerWorkspace} bytes ` +
      "per workspace and type): its deletes there would get 503. Raise it, e.g. " +
      "--webhook-arg=--index-max-objects-per-workspace=200000 --webhook-arg=--index-max-bytes-per-workspace=67108864",
  );
}

/**
 * Takes the webhook out of kcp's admission chain (off) or puts it back (on) without touching the rule, so that the
 * webhook keeps its rules and its index: off stops the controller (it releases its lease) and deletes the webhook
 * configuration it wrote; on starts the controller, whose first pass writes the configuration again. Waits until
 * kcp's admission chain agrees, judged by a dry-run DELETE of the probe VPC; returns the milliseconds it took.
 */
export async function setAdmission(env: BenchEnv, on: boolean): Promise<number> {
  const started = Date.now();
  const network = env.kcp.ws(PATHS.network);
  if (on) await env.bins.startController();
  else {
    await env.bins.controller?.proc.stop();
    await network.request("DELETE", VWC_PATH).catch((err: unknown) => {
      if (!isApiError(err, 404)) throw err;
    });
  }
  env.protected = on;
  await waitFor(`the VWC to be ${on ? "installed" : "removed"}`, async () => {
    const present = (await network.getOptional(VWC_PATH)) !== undefined;
    return present === on || undefined;
  });
  await waitForProbe(env, on);
  return Date.now() - started;
}
