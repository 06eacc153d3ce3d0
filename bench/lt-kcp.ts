// Local targets on a real kcp (issue 31): the controller and the webhook binaries over N consumer workspaces of one
// dependent export (bench/lt-kcp-world.ts sets them up). The stand-in bench (bench/local-targets.ts) has no kcp in it;
// this phase counts on kcp: the time until every accepting consumer has the configuration, the controller's writes
// (its own counter dependency_controller_webhook_configuration_writes_total, and kcp's apiserver_request_total for
// validatingwebhookconfigurations where kcp counts the virtual workspace's requests) in the first pass, a steady pass,
// after one consumer is added and after the rule is deleted (pruning through the virtual workspace), the lists per
// pass, the binaries' memory, and what the virtual workspace answers once the export is deleted.
import { loadavg } from "node:os";
import { apply } from "../tools/kcp/api.ts";
import { RULES } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { VAULT_GROUP, vaultRule } from "../test/e2e/local-targets.ts";
import type { BenchEnv } from "./env.ts";
import {
  LT_PROVIDER,
  createConsumers,
  diff,
  kcpRequests,
  scrapeBinary,
  setupProvider,
  vwAnswer,
  vwCounts,
  type LtWorld,
} from "./lt-kcp-world.ts";
import { memoryOf } from "./machine.ts";
import { metricValue, type Sample } from "./stats.ts";

export interface LocalTargetsOptions {
  consumers: number;
  declining: number;
  concurrency: number;
  resyncS: number;
  timeoutMs: number;
}

export interface LtStep {
  step: string;
  /** Wall time until kcp showed the expected configurations (undefined for a step that waits for passes). */
  ms?: number;
  passes: number;
  writes: { create: number; update: number; delete: number };
  /** kcp's apiserver_request_total deltas for apibindings and validatingwebhookconfigurations, by "VERB resource". */
  kcp: Record<string, number>;
  /** Our configurations the virtual workspace lists at the end of the step. */
  vwcs: number;
}

export interface LocalTargetsResult {
  consumers: number;
  accepting: number;
  setupMs: number;
  loadAverage: number[];
  steps: LtStep[];
  memory: { controllerRssMiB?: number; webhookRssMiB?: number; webhookHeapMiB?: number; at: string }[];
  /** After the export is deleted: the virtual workspace's answers and how the controller carried on. */
  exportDeleted?: {
    bindings: string;
    vwcs: string;
    passes: number;
    readErrors: number;
    controllerRunning: boolean;
    /** The rule's LocalTargetsProtected condition then. */
    condition: string;
    /** Read errors over 2 passes after the rule too is deleted (and one pass to settle): 0 once the export is forgotten. */
    readErrorsAfterRuleDeleted: number;
    log: string[];
  };
  errors: string[];
}

const WRITES = "dependency_controller_webhook_configuration_writes_total";
const PASSES = "dependency_controller_reconciles_total";
const RULE_PATH = `${RULES}/endpoint-credentials`;

interface Mark {
  t: number;
  ctl: Sample[];
  kcp: Record<string, number>;
}

export async function runLocalTargets(env: BenchEnv, opts: LocalTargetsOptions): Promise<LocalTargetsResult> {
  const n = opts.consumers;
  const accepting = n - opts.declining;
  const res: LocalTargetsResult = {
    consumers: n,
    accepting,
    setupMs: 0,
    loadAverage: [],
    steps: [],
    memory: [],
    errors: [],
  };
  const t0 = Date.now();
  env.log(`local targets: provider ${LT_PROVIDER} and ${n} consumer workspaces (${opts.declining} declining)`);
  const world = await setupProvider(env);
  await createConsumers(env, { from: 0, to: n, n, declining: opts.declining }, opts.concurrency);
  await waitFor(
    "the virtual workspace to list every binding",
    async () => {
      const c = await vwCounts(world);
      return ("bindings" in c && c.bindings >= n) || undefined;
    },
    { timeoutMs: opts.timeoutMs, intervalMs: 2000 },
  );
  res.setupMs = Date.now() - t0;
  // A fresh controller: its counters start at 0 and it resyncs often enough to count steady passes quickly.
  env.bins.controllerArgs = [`--resync-period=${opts.resyncS}s`];
  await env.bins.controller?.proc.stop();
  await env.bins.startController();
  await memory(env, res, `${n} consumers, no local-target rule`);

  const provider = env.kcp.ws(LT_PROVIDER);
  // A step waits for the controller's sequential writes, one per consumer: allow a slow kcp 0.6 s each.
  const step = stepper(env, world, res, 300_000 + 600 * n);
  await step("first pass: rule created", accepting, () => apply(provider, [vaultRule()]));
  await step("steady pass", undefined);
  await memory(env, res, `${n} consumers, ${accepting} configurations`);
  await step("one consumer added (accepts)", accepting + 1, () =>
    createConsumers(env, { from: n, to: n + 1, n: n + 1, declining: 0 }, 1),
  );
  await step("steady pass", undefined);
  await step("rule deleted: pruned", 0, () => provider.request("DELETE", RULE_PATH));
  await step("rule created again", accepting + 1, () => apply(provider, [vaultRule()]));
  await exportDeleted(env, world, res);
  res.loadAverage = loadavg();
  return res;
}

/** VmRSS of both binaries, and the webhook's V8 heap in use (its default metrics; the controller exports none). */
async function memory(env: BenchEnv, res: LocalTargetsResult, at: string): Promise<void> {
  const heap = metricValue(await scrapeBinary(env.bins.webhook?.healthUrl), "nodejs_heap_size_used_bytes");
  res.memory.push({ at, ...rssOf(env), webhookHeapMiB: heap / 2 ** 20 });
}

function rssOf(env: BenchEnv): { controllerRssMiB?: number; webhookRssMiB?: number } {
  const c = memoryOf(env.bins.controller?.proc.pid)?.rssMiB;
  const w = memoryOf(env.bins.webhook?.proc.pid)?.rssMiB;
  return { ...(c !== undefined ? { controllerRssMiB: c } : {}), ...(w !== undefined ? { webhookRssMiB: w } : {}) };
}

async function mark(env: BenchEnv): Promise<Mark> {
  return { t: Date.now(), ctl: await scrapeBinary(env.bins.controller?.healthUrl), kcp: kcpRequests(env) };
}

/**
 * One step: `act`, then wait until the virtual workspace lists `want` configurations and the controller has finished
 * a pass after that (or, `want` undefined, for two more passes); the deltas between the marks.
 */
function stepper(env: BenchEnv, world: LtWorld, res: LocalTargetsResult, timeoutMs: number) {
  return async (name: string, want: number | undefined, act?: () => Promise<unknown>): Promise<void> => {
    env.log(`local targets: ${name}`);
    const before = await mark(env);
    await act?.();
    let ms: number | undefined;
    if (want !== undefined) {
      await waitFor(
        `${want} configurations (${name})`,
        async () => {
          const c = await vwCounts(world);
          return ("vwcs" in c && c.vwcs === want) || undefined;
        },
        { timeoutMs, intervalMs: 1000 },
      ).catch((err: unknown) => res.errors.push(`${name}: ${(err as Error).message}`));
      ms = Date.now() - before.t;
    }
    await passes(env, want === undefined ? 2 : 1, timeoutMs);
    const after = await mark(env);
    const w = (action: string) =>
      metricValue(after.ctl, WRITES, { action }) - metricValue(before.ctl, WRITES, { action });
    const c = await vwCounts(world);
    res.steps.push({
      step: name,
      ...(ms !== undefined ? { ms } : {}),
      passes: metricValue(after.ctl, PASSES) - metricValue(before.ctl, PASSES),
      writes: { create: w("create"), update: w("update"), delete: w("delete") },
      kcp: diff(after.kcp, before.kcp),
      vwcs: "vwcs" in c ? c.vwcs : -c.status,
    });
    env.log(`local targets: ${name}: ${JSON.stringify(res.steps.at(-1))}`);
  };
}

/** Waits until the controller completes `k` more passes (dependency_controller_reconciles_total). */
async function passes(env: BenchEnv, k: number, timeoutMs: number): Promise<void> {
  const count = async () => metricValue(await scrapeBinary(env.bins.controller?.healthUrl), PASSES);
  const start = await count();
  await waitFor(`${k} controller passes`, async () => (await count()) >= start + k || undefined, {
    timeoutMs,
    intervalMs: 500,
  });
}

/** Deletes the dependent export with the rule still there; what the virtual workspace and the controller do then. */
async function exportDeleted(env: BenchEnv, world: LtWorld, res: LocalTargetsResult): Promise<void> {
  env.log("local targets: deleting the dependent export (the rule stays)");
  const provider = env.kcp.ws(LT_PROVIDER);
  const before = await scrapeBinary(env.bins.controller?.healthUrl);
  const pid = env.bins.controller?.proc.pid;
  await provider.request("DELETE", `/apis/apis.kcp.io/v1alpha2/apiexports/${VAULT_GROUP}`);
  const gone = async () => ((await vwAnswer(world, "bindings")) !== "200" ? true : undefined);
  try {
    await waitFor("the virtual workspace to stop serving the export", gone, { timeoutMs: 300_000, intervalMs: 1000 });
    await passes(env, 3, 300_000);
  } catch (err) {
    res.errors.push(`export deleted: ${(err as Error).message}`);
  }
  const after = await scrapeBinary(env.bins.controller?.healthUrl);
  const errs = (s: Sample[]) => metricValue(s, "dependency_controller_errors_total", { reason: "local_targets_read" });
  type Rule = { status?: { conditions?: { type: string; status: string; message?: string }[] } };
  const rule = await provider.get<Rule>(RULE_PATH).catch(() => undefined);
  const cond = rule?.status?.conditions?.find((c) => c.type === "LocalTargetsProtected");
  res.exportDeleted = {
    bindings: await vwAnswer(world, "bindings"),
    vwcs: await vwAnswer(world, "vwcs"),
    passes: metricValue(after, PASSES) - metricValue(before, PASSES),
    readErrors: errs(after) - errs(before),
    controllerRunning: env.bins.controller?.proc.running === true && env.bins.controller.proc.pid === pid,
    condition: cond ? `${cond.status}: ${cond.message ?? ""}` : "none",
    readErrorsAfterRuleDeleted: await readErrorsOnceRuleDeleted(env),
    log: (env.bins.controller?.proc.logTail(200) ?? "")
      .split("\n")
      .filter((l) => /local targets|local-target/.test(l))
      .slice(-3),
  };
}

/** Deletes the rule of the deleted export, lets one pass visit it, then counts read errors over two more passes. */
async function readErrorsOnceRuleDeleted(env: BenchEnv): Promise<number> {
  await env.kcp.ws(LT_PROVIDER).request("DELETE", RULE_PATH);
  await passes(env, 2, 300_000);
  const errs = async () =>
    metricValue(await scrapeBinary(env.bins.controller?.healthUrl), "dependency_controller_errors_total", {
      reason: "local_targets_read",
    });
  const before = await errs();
  await passes(env, 2, 300_000);
  return (await errs()) - before;
}
