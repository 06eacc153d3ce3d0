// The world of the local-targets phase (bench/lt-kcp.ts) on the bench's kcp: a provider exporting Endpoints with the
// ValidatingWebhookConfiguration claim (test/e2e/local-targets.ts, as the e2e suite sets it up), N consumer workspaces
// binding that export (a few declining the claim), and what kcp shows of it: the controller's configurations and the
// consumers' bindings as the export's virtual workspace lists them to the controller's own identity, kcp's request
// counters, the binaries' counters and memory.
import { readFileSync } from "node:fs";
import path from "node:path";
import { exportId, LOCAL_TARGETS_LABEL } from "../src/controller/local-targets.ts";
import type { LogicalClusterName } from "../src/api/types.ts";
import { loadKcpConnection } from "../src/kcp/kubeconfig.ts";
import { ApiError, isApiError, type RestClient } from "../src/kcp/rest.ts";
import { ENDPOINT_SLICES_PATH } from "../src/kcp/virtualworkspace.ts";
import { apply, createWorkspace, waitForBinding } from "../tools/kcp/api.ts";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import { EXPORT_NAME, IDENTITIES, PATHS, depCtrlBinding, grantIndex } from "../tools/kcp/topology.ts";
import { bindVault, grantLocalTargets, VAULT_GROUP, vaultApi } from "../test/e2e/local-targets.ts";
import type { BenchEnv } from "./env.ts";
import { pool } from "./populate.ts";
import { scrapeKcp } from "./scrape.ts";
import { parseMetrics, type Sample } from "./stats.ts";

export const LT_PROVIDER = "root:lt-provider";
export const consumerPath = (i: number): string => `root:lt-${String(i).padStart(4, "0")}`;
const VWCS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const BINDINGS = "/apis/apis.kcp.io/v1alpha2/apibindings";

export interface LtWorld {
  providerCluster: LogicalClusterName;
  /** The export's virtual workspace across its consumers (`.../clusters/*`), as the controller's identity. */
  vw: RestClient;
  /** `?labelSelector=` naming this export's configurations, as the controller lists them. */
  selector: string;
}

/** Whether consumer `i` of `n` declines the claim: `declining` of them, spread evenly. */
export function declines(i: number, n: number, declining: number): boolean {
  if (declining <= 0) return false;
  const every = Math.max(1, Math.floor(n / declining));
  return i % every === every - 1 && Math.floor(i / every) < declining;
}

/** The provider: its dep-ctrl binding, the Endpoints export, the controller's and the webhook's grants. */
export async function setupProvider(env: BenchEnv): Promise<LtWorld> {
  const providerCluster = await createWorkspace(env.kcp.admin, LT_PROVIDER);
  const provider = env.kcp.ws(LT_PROVIDER);
  await apply(provider, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider, EXPORT_NAME);
  await apply(provider, vaultApi());
  await grantLocalTargets(
    provider,
    readFileSync(path.join(REPO_ROOT, "deploy/rbac/provider-local-targets.yaml"), "utf8"),
  );
  await grantIndex(env.kcp, LT_PROVIDER, VAULT_GROUP);
  const slice = await env.kcp
    .ws(PATHS.depCtrl)
    .get<{ status?: { endpoints?: { url: string }[] } }>(`${ENDPOINT_SLICES_PATH}/${EXPORT_NAME}`);
  const depCtrlUrl = slice.status?.endpoints?.[0]?.url;
  if (!depCtrlUrl) throw new Error("the dep-ctrl export's endpoint slice names no endpoint");
  const prefix = depCtrlUrl.slice(0, depCtrlUrl.indexOf("/services/apiexport/"));
  const kubeconfig = env.kcp.kubeconfigFor(IDENTITIES.controller.token, PATHS.depCtrl, "bench-controller.kubeconfig");
  const base = loadKcpConnection({ kubeconfig }).base;
  const vw = base.withBase(`${prefix}/services/apiexport/${providerCluster}/${VAULT_GROUP}/clusters/*`);
  const id = exportId({ cluster: providerCluster, exportName: VAULT_GROUP });
  return { providerCluster, vw, selector: `?labelSelector=${encodeURIComponent(`${LOCAL_TARGETS_LABEL}=${id}`)}` };
}

/** Consumer workspaces `from`..`to-1`, each binding the export (kcp-admin as the workspace's owner), in parallel. */
export async function createConsumers(
  env: BenchEnv,
  range: { from: number; to: number; n: number; declining: number },
  concurrency: number,
): Promise<void> {
  const items = Array.from({ length: range.to - range.from }, (_, k) => range.from + k);
  let done = 0;
  await pool(items, concurrency, async (i) => {
    await retrying(() => createWorkspace(env.kcp.admin, consumerPath(i), { timeoutMs: 600_000 }));
    await retrying(() => bindVault(env.kcp.ws(consumerPath(i)), LT_PROVIDER, !declines(i, range.n, range.declining)));
    if (++done % 50 === 0) env.log(`local targets: ${done} of ${items.length} consumer workspaces created and bound`);
  });
}

async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const transient = !(err instanceof ApiError) || err.status === 429 || err.status >= 500;
      if (!transient || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }
}

/** How many of our configurations, and bindings of the export, the virtual workspace lists (`status` on error). */
export async function vwCounts(w: LtWorld): Promise<{ vwcs: number; bindings: number } | { status: number }> {
  try {
    const [v, b] = await Promise.all([
      w.vw.get<{ items: unknown[] }>(`${VWCS}${w.selector}`),
      w.vw.get<{ items: unknown[] }>(BINDINGS),
    ]);
    return { vwcs: v.items.length, bindings: b.items.length };
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status };
    throw err;
  }
}

/** The status (or 200) and message with which the virtual workspace answers a list, e.g. after the export is gone. */
export async function vwAnswer(w: LtWorld, what: "bindings" | "vwcs"): Promise<string> {
  try {
    await w.vw.get(what === "bindings" ? BINDINGS : `${VWCS}${w.selector}`);
    return "200";
  } catch (err) {
    return isApiError(err) ? `${err.status} ${(err as Error).message.slice(0, 160)}` : String(err);
  }
}

export async function scrapeBinary(healthUrl: string | undefined): Promise<Sample[]> {
  const res = await fetch(`${healthUrl ?? ""}/metrics`);
  if (!res.ok) throw new Error(`GET ${healthUrl ?? ""}/metrics: ${res.status}`);
  return parseMetrics(await res.text());
}

const LT_RESOURCES = ["apibindings", "validatingwebhookconfigurations"];

/** kcp's apiserver_request_total for the two resources local targets read and write, by `verb resource`. */
export function kcpRequests(env: BenchEnv): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of scrapeKcp(env)) {
    if (s.name !== "apiserver_request_total" || !LT_RESOURCES.includes(s.labels["resource"] ?? "")) continue;
    const key = `${s.labels["verb"]} ${s.labels["resource"]}`;
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

export function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}
