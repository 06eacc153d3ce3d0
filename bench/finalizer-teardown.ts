// 2b. Teardown with a slow backend: N VPC/VM pairs whose VMs each hold a finalizer the simulated backend clears a
// fixed time after their delete (td-history.ts), taken down three ways, for one namespace and for a whole consumer
// workspace: kcp's own deletion without protection, kcp's own deletion with protection, and `kubectl dependencies
// teardown` (its run function, imported) with protection followed by kcp's deletion of what is then empty. Timed
// from the first DELETE to the namespace or workspace answering 404; ordering violations (a VPC gone while a VM
// naming it still existed) come from kcp's watch history.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openSession } from "../src/plugin/session.ts";
import { executeTeardown, type ExecuteReport } from "../src/plugin/commands/teardown/execute.ts";
import { boundTypes, kcpTeardownApi } from "../src/plugin/commands/teardown/kcp-api.ts";
import { planScope } from "../src/plugin/commands/teardown/run.ts";
import type { RestClient } from "../src/kcp/rest.ts";
import { realClock } from "../src/util/clock.ts";
import { apply, createWorkspace, deleteWorkspace, waitForBinding } from "../tools/kcp/api.ts";
import { VPCS, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import { PATHS, type LookupMode } from "../tools/kcp/topology.ts";
import { setProtection, useLookup, type BenchEnv } from "./env.ts";
import { createAll, ensureNamespace } from "./populate.ts";
import { metricValue } from "./stats.ts";
import { scrapeWebhook } from "./scrape.ts";
import { BACKEND_FINALIZER, TeardownWatch } from "./td-history.ts";
import { orderingOf, type Ordering } from "./td-ordering.ts";
import { deleteNamespaceIn } from "./teardown.ts";

export type Scope = "namespace" | "workspace";
export type Strategy = "kcp" | "kcp-protected" | "teardown-protected";
export const STRATEGIES: readonly Strategy[] = ["kcp", "kcp-protected", "teardown-protected"];

export interface FinalizerTeardownOptions {
  pairs: number;
  finalizerMs: number;
  /** Namespace rows, workspace rows, or both. */
  scopes: readonly Scope[];
  concurrency: number;
  /** The teardown command's --concurrency. */
  teardownConcurrency: number;
  timeoutMs: number;
  mode: LookupMode;
}

export interface FinalizerTeardownRow {
  scope: Scope;
  strategy: Strategy;
  pairs: number;
  finalizerMs: number;
  mode: LookupMode;
  createMs: number;
  /** First DELETE → the namespace or workspace answers 404. */
  wallMs: number;
  /** teardown only: planning alone (bound types, the rules, list, dry runs of protected objects), before the timed run. */
  planMs?: number;
  /** teardown only: the dry runs the plan sent. */
  planDryRuns?: number;
  /** teardown only: its own run, before kcp deletes the emptied namespace or workspace. */
  teardownMs?: number;
  waves?: number;
  /** Real DELETEs refused: the webhook's denials for kcp's deleter; the command's own count for teardown. */
  refusedDeletes: number;
  /** Every denial the webhook made meanwhile, dry runs included. */
  webhookDenials: number;
  ordering: Ordering;
  finalizersCleared: number;
  gaps: string[];
  error?: string;
}

const DECISIONS = "dependency_webhook_decisions_total";

export async function runFinalizerTeardown(
  env: BenchEnv,
  o: FinalizerTeardownOptions,
): Promise<FinalizerTeardownRow[]> {
  await useLookup(env, o.mode);
  const rows: FinalizerTeardownRow[] = [];
  for (const scope of o.scopes)
    for (const strategy of STRATEGIES) {
      const on = strategy !== "kcp";
      if (on !== env.protected) await setProtection(env, on);
      const r = await oneRow(env, scope, strategy, o);
      rows.push(r);
      env.log(
        `finalizer teardown ${scope} ${strategy} N=${o.pairs}: ${(r.wallMs / 1000).toFixed(1)} s, ` +
          `${r.ordering.violations} ordering violations, ${r.refusedDeletes} refused${r.error ? `, ${r.error}` : ""}`,
      );
    }
  if (!env.protected) await setProtection(env, true);
  return rows;
}

const short = (s: Strategy): string => ({ kcp: "off", "kcp-protected": "on", "teardown-protected": "td" })[s];

/** A fresh consumer workspace that binds both providers' APIs, as the topology's consumers do. */
async function consumerWorkspace(env: BenchEnv, path: string): Promise<RestClient> {
  await createWorkspace(env.kcp.admin, path);
  const ws = env.kcp.ws(path);
  await apply(ws, readFileSync(join(REPO_ROOT, "test/fixtures/consumer-bindings.yaml"), "utf8"), env.topo.vars);
  await waitForBinding(ws, "network.test.io");
  await waitForBinding(ws, "compute.test.io");
  return ws;
}

/** N pairs in `ns`, each VM holding the backend's finalizer; returns the milliseconds it took. */
async function createFinalizedPairs(ws: RestClient, ns: string, n: number, concurrency: number): Promise<number> {
  await ensureNamespace(ws, ns);
  const t0 = Date.now();
  const objects = Array.from({ length: n }, (_, i) => {
    const id = String(i).padStart(5, "0");
    const machine = vm(`vm-${id}`, { vpc: `vpc-${id}` }, ns);
    machine.metadata = { ...machine.metadata, finalizers: [BACKEND_FINALIZER] };
    return [vpc(`vpc-${id}`, ns), machine];
  }).flat();
  await createAll(ws, objects, concurrency);
  return Date.now() - t0;
}

async function oneRow(
  env: BenchEnv,
  scope: Scope,
  strategy: Strategy,
  o: FinalizerTeardownOptions,
): Promise<FinalizerTeardownRow> {
  const name = `ftd-${scope === "namespace" ? "ns" : "ws"}-${short(strategy)}-${o.pairs}`;
  const path = scope === "namespace" ? PATHS.consumer1 : `root:${name}`;
  const ws = scope === "namespace" ? env.consumer : await consumerWorkspace(env, path);
  const createMs = await createFinalizedPairs(ws, name, o.pairs, o.concurrency);
  if (strategy !== "kcp") await waitProtected(ws, name, o.pairs);
  const watch = new TeardownWatch(ws, realClock, o.finalizerMs);
  await watch.start();
  const denials = async (): Promise<number> => metricValue(await scrapeWebhook(env), DECISIONS, { outcome: "denied" });
  const deniedBefore = await denials();
  const td = strategy === "teardown-protected" ? await teardownSession(env, path, scope, name, o) : undefined;
  const t0 = Date.now();
  let report: ExecuteReport | undefined;
  let error: string | undefined;
  if (td) {
    report = await executeTeardown(td.api, {
      concurrency: o.teardownConcurrency,
      timeoutMs: o.timeoutMs,
      clock: realClock,
      progress: (l) => env.log(`  teardown: ${l}`),
    });
    td.close();
    if (!report.ok) error = `teardown: ${report.problem ?? "failed"}`;
  }
  const teardownMs = Date.now() - t0;
  const gone = await deleteScope(env, ws, scope, path, name, o.timeoutMs);
  error ??= gone;
  const wallMs = Date.now() - t0;
  const webhookDenials = (await denials()) - deniedBefore;
  // The workspace-wide watch also sees the probe namespace: only the namespace under test counts.
  const ordering = (): Ordering => orderingOf(watch.events.filter((e) => e.namespace === name));
  await waitFor("the watch to see every deletion", async () => ordering().unobserved === 0, {
    timeoutMs: 30_000,
    intervalMs: 200,
  }).catch(() => undefined);
  await watch.stop();
  return {
    ...{ scope, strategy, pairs: o.pairs, finalizerMs: o.finalizerMs, mode: o.mode, createMs, wallMs },
    ...(td ? { planMs: td.planMs, planDryRuns: td.planDryRuns, teardownMs, waves: report?.waves.length ?? 0 } : {}),
    refusedDeletes: report ? report.refusedDeletes : strategy === "kcp" ? 0 : webhookDenials,
    webhookDenials,
    ordering: ordering(),
    finalizersCleared: watch.finalizersCleared,
    gaps: watch.gaps,
    ...(error ? { error } : {}),
  };
}

/** Waits until the webhook refuses the last VPC (index mode: the index holds every VM). */
async function waitProtected(ws: RestClient, ns: string, pairs: number): Promise<void> {
  const last = `${at(VPCS, ns)}/vpc-${String(pairs - 1).padStart(5, "0")}`;
  await waitFor(
    `${last} to be protected`,
    async () => {
      const r = await tryDelete(ws, last, { dryRun: true });
      return (!r.allowed && r.status === 409) || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
}

/** The teardown command's session and API for the scope, and the plan timed once on its own (as `--plan` runs). */
async function teardownSession(env: BenchEnv, path: string, scope: Scope, ns: string, o: FinalizerTeardownOptions) {
  const s = openSession({ kubeconfig: env.kcp.adminKubeconfig, context: "base", workspace: path });
  const t0 = Date.now();
  const types = await boundTypes(s);
  const api = kcpTeardownApi(s, scope === "namespace" ? { namespace: ns } : { workspace: true }, types, new Set());
  const { dryRuns } = await planScope(s, api, o.teardownConcurrency, (l) => env.log(`  teardown plan: ${l}`));
  return { api, planMs: Date.now() - t0, planDryRuns: dryRuns, close: () => s.base.close() };
}

/** Deletes the namespace or the workspace and waits until it answers 404; the error on a timeout. */
async function deleteScope(
  env: BenchEnv,
  ws: RestClient,
  scope: Scope,
  path: string,
  ns: string,
  timeoutMs: number,
): Promise<string | undefined> {
  if (scope === "namespace") return deleteNamespaceIn(ws, ns, timeoutMs);
  await deleteWorkspace(env.kcp.admin, path);
  const root = env.kcp.ws("root");
  const wsPath = `/apis/tenancy.kcp.io/v1alpha1/workspaces/${path.split(":").at(-1)}`;
  return waitFor(`workspace ${path} to be gone`, async () => (await root.getOptional(wsPath)) === undefined, {
    timeoutMs,
    intervalMs: 200,
  }).then(
    () => undefined,
    (err: unknown) => (err as Error).message,
  );
}
