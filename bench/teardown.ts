// 2. Namespace teardown: a namespace holding N VPC/VM pairs (every VM references its VPC) is deleted and timed until
// the namespace is gone, with and without the webhook. Webhook calls and denials during the teardown come from the
// decisions counter; the decision histogram's sum is the total time the webhook spent deciding.
import { vm, vpc } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import {
  cacheWait,
  createAll,
  ensureNamespace,
  scrapeKcp,
  scrapeWebhook,
  setProtection,
  type BenchEnv,
} from "./env.ts";
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
}

export interface TeardownResult {
  n: number;
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
  let protectedNow = true;
  for (const [idx, n] of opts.ns.entries()) {
    // Alternate which mode goes first so neither always runs on the warmer (or more loaded) kcp.
    const modes = idx % 2 === 0 ? [true, false] : [false, true];
    for (const on of modes) {
      if (on !== protectedNow) {
        await setProtection(env, on);
        protectedNow = on;
      }
      results.push(await teardownOnce(env, n, on, opts));
      const last = results.at(-1);
      env.log(
        `teardown N=${n} ${on ? "protected" : "unprotected"}: ${((last?.teardownMs ?? NaN) / 1000).toFixed(1)} s, ` +
          `webhook calls ${JSON.stringify(last?.webhookCalls)}`,
      );
    }
  }
  if (!protectedNow) await setProtection(env, true);
  return results;
}

async function teardownOnce(env: BenchEnv, n: number, on: boolean, opts: TeardownOptions): Promise<TeardownResult> {
  const ws = env.consumer;
  const ns = `td-${n}-${on ? "p" : "u"}`;
  await ensureNamespace(ws, ns);
  const t0 = Date.now();
  const objects = Array.from({ length: n }, (_, i) => {
    const id = String(i).padStart(5, "0");
    return [vpc(`vpc-${id}`, ns), vm(`vm-${id}`, { vpc: `vpc-${id}` }, ns)];
  }).flat();
  await createAll(ws, objects, opts.concurrency);
  const createMs = Date.now() - t0;

  const before = await scrapeWebhook(env);
  const kcpBefore = scrapeKcp(env);
  const started = Date.now();
  let error: string | undefined;
  await ws.request("DELETE", `/api/v1/namespaces/${ns}`);
  try {
    await waitFor(
      `namespace ${ns} to be gone`,
      async () => (await ws.getOptional(`/api/v1/namespaces/${ns}`)) === undefined || undefined,
      { timeoutMs: opts.timeoutMs, intervalMs: 200 },
    );
  } catch (err) {
    error = (err as Error).message;
  }
  const teardownMs = Date.now() - started;
  const after = await scrapeWebhook(env);
  const wait = cacheWait(scrapeKcp(env), kcpBefore);
  const calls = (outcome: string, s: Sample[]) => metricValue(s, DECISIONS, { outcome });
  const h = summarizeHistogram(histogramDelta(histogram(after, DECISION_SECONDS), histogram(before, DECISION_SECONDS)));
  const sumAfter = metricValue(after, `${DECISION_SECONDS}_sum`);
  const sumBefore = metricValue(before, `${DECISION_SECONDS}_sum`);
  return {
    n,
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
