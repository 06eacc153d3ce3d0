// 2. Namespace teardown: a namespace holding N VPC/VM pairs (every VM references its VPC) is deleted and timed until
// the namespace is gone, with and without the webhook, in each lookup mode (the webhook restarted between modes; the
// "without" runs are repeated per mode so each mode's ratio compares neighbours in time). Webhook calls and denials
// during the teardown come from the decisions counter; the decision histogram's sum is the total time the webhook
// spent deciding.
import type { RestClient } from "../src/kcp/rest.ts";
import { vm, vpc } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import type { LookupMode } from "../tools/kcp/topology.ts";
import { cacheWait, scrapeKcp, scrapeWebhook } from "./scrape.ts";
import { createAll, ensureNamespace } from "./populate.ts";
import { setProtection, useLookup, type BenchEnv } from "./env.ts";
import {
  histogram,
  histogramDelta,
  metricValue,
  summarizeHistogram,
  type HistogramSummary,
  type Sample,
} from "./stats.ts";

export interface TeardownOptions {
  ns: number[];
  concurrency: number;
  timeoutMs: number;
  modes: LookupMode[];
}

export interface TeardownResult {
  n: number;
  /** The webhook's --lookup (for "without the webhook" too: the run that belongs to this mode's pair). */
  mode: LookupMode;
  protected: boolean;
  /** From the namespace DELETE to its GET answering 404 (polled every 200 ms). */
  teardownMs: number;
  createMs: number;
  webhookCalls: { allowed: number; denied: number; errored: number };
  /** Decisions during the teardown: count, mean and total (sum) time. */
  decisions: HistogramSummary & { totalMs: number };
  /** kcp's watch-cache freshness wait for VM LISTs (the webhook's lookups) during the teardown; needs kubectl. */
  kcpCacheWait?: { reads: number; waitMs: number };
  error?: string;
}

const DECISIONS = "dependency_webhook_decisions_total";
const DECISION_SECONDS = "dependency_webhook_decision_duration_seconds";

export async function runTeardown(env: BenchEnv, opts: TeardownOptions): Promise<TeardownResult[]> {
  const results: TeardownResult[] = [];
  for (const [idx, n] of opts.ns.entries()) {
    // Alternate which mode, and within it which of on/off, goes first, so neither always runs on the warmer kcp.
    const modes = idx % 2 === 0 ? opts.modes : [...opts.modes].reverse();
    for (const [m, mode] of modes.entries()) {
      await useLookup(env, mode);
      const order = (idx + m) % 2 === 0 ? [true, false] : [false, true];
      for (const on of order) {
        if (on !== env.protected) await setProtection(env, on);
        const last = await teardownOnce(env, n, mode, on, opts);
        results.push(last);
        env.log(
          `teardown N=${n} lookup=${mode} ${on ? "protected" : "unprotected"}: ` +
            `${(last.teardownMs / 1000).toFixed(1)} s, webhook calls ${JSON.stringify(last.webhookCalls)}`,
        );
      }
    }
  }
  if (!env.protected) await setProtection(env, true);
  return results;
}

/** Creates `n` VPC/VM pairs (each VM references its VPC) in a new namespace `ns`; returns the milliseconds it took. */
export async function createPairs(env: BenchEnv, ns: string, n: number, concurrency: number): Promise<number> {
  await ensureNamespace(env.consumer, ns);
  const t0 = Date.now();
  const objects = Array.from({ length: n }, (_, i) => {
    const id = String(i).padStart(5, "0");
    return [vpc(`vpc-${id}`, ns), vm(`vm-${id}`, { vpc: `vpc-${id}` }, ns)];
  }).flat();
  await createAll(env.consumer, objects, concurrency);
  return Date.now() - t0;
}

/** Deletes the namespace and waits until its GET answers 404 (polled every 200 ms); the error on a timeout. */
export async function deleteNamespace(env: BenchEnv, ns: string, timeoutMs: number): Promise<string | undefined> {
  return deleteNamespaceIn(env.consumer, ns, timeoutMs);
}

/** deleteNamespace in any workspace. */
export async function deleteNamespaceIn(ws: RestClient, ns: string, timeoutMs: number): Promise<string | undefined> {
  await ws.request("DELETE", `/api/v1/namespaces/${ns}`);
  try {
    await waitFor(
      `namespace ${ns} to be gone`,
      async () => (await ws.getOptional(`/api/v1/namespaces/${ns}`)) === undefined || undefined,
      { timeoutMs, intervalMs: 200 },
    );
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

async function teardownOnce(
  env: BenchEnv,
  n: number,
  mode: LookupMode,
  on: boolean,
  opts: TeardownOptions,
): Promise<TeardownResult> {
  const ns = `td-${n}-${mode}-${on ? "p" : "u"}`;
  const createMs = await createPairs(env, ns, n, opts.concurrency);
  const before = await scrapeWebhook(env);
  const kcpBefore = scrapeKcp(env);
  const started = Date.now();
  const error = await deleteNamespace(env, ns, opts.timeoutMs);
  const teardownMs = Date.now() - started;
  const after = await scrapeWebhook(env);
  const wait = cacheWait(scrapeKcp(env), kcpBefore);
  const calls = (outcome: string, s: Sample[]) => metricValue(s, DECISIONS, { outcome });
  const h = summarizeHistogram(histogramDelta(histogram(after, DECISION_SECONDS), histogram(before, DECISION_SECONDS)));
  const sumAfter = metricValue(after, `${DECISION_SECONDS}_sum`);
  const sumBefore = metricValue(before, `${DECISION_SECONDS}_sum`);
  return {
    n,
    mode,
    protected: on,
    teardownMs,
    createMs,
    webhookCalls: {
      allowed: calls("allowed", after) - calls("allowed", before),
      denied: calls("denied", after) - calls("denied", before),
      errored: calls("errored", after) - calls("errored", before),
    },
    decisions: { ...h, totalMs: (sumAfter - sumBefore) * 1000 },
    ...(wait ? { kcpCacheWait: wait } : {}),
    ...(error ? { error } : {}),
  };
}
