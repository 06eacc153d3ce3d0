// 4. Memory: resident set (VmRSS) and its peak (VmHWM) of the webhook and controller processes, read from /proc at
// labelled moments: idle (each lookup mode, right after the webhook started in it), after the dependents of the
// latency phase have been checked (each mode), and with many rules loaded.
// kcp's own RSS is recorded alongside for scale.
import type { KObject } from "../tools/kcp/api.ts";
import { apply } from "../tools/kcp/api.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { PATHS, type LookupMode } from "../tools/kcp/topology.ts";
import { RULES } from "../tools/kcp/objects.ts";
import { memoryOf, type Memory } from "./machine.ts";
import { pool } from "./populate.ts";
import { type BenchEnv } from "./env.ts";
import { metricValue, parseMetrics } from "./stats.ts";
import { dependencyRule } from "../tools/kcp/rules.ts";

export interface MemorySnapshot {
  label: string;
  /** The webhook's --lookup at the moment. */
  lookup: LookupMode | "auto";
  rulesLoaded: number;
  webhook?: Memory;
  /** The webhook's V8 heap in use (nodejs_heap_size_used_bytes): unlike RSS, not a matter of when V8 last shrank. */
  webhookHeapMiB?: number;
  controller?: Memory;
  kcp?: Memory;
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function gauge(url: string | undefined, name: string): Promise<number> {
  const res = await fetch(`${url ?? ""}/metrics`);
  return metricValue(parseMetrics(await res.text()), name);
}

export async function snapshot(env: BenchEnv, label: string, settleMs = 3_000): Promise<MemorySnapshot> {
  await settle(settleMs);
  const snap: MemorySnapshot = {
    label,
    lookup: env.bins.lookup,
    rulesLoaded: await gauge(env.bins.webhook?.healthUrl, "dependency_webhook_registry_rules"),
  };
  const webhook = memoryOf(env.bins.webhook?.proc.pid);
  const controller = memoryOf(env.bins.controller?.proc.pid);
  const kcp = memoryOf(env.kcp.process.pid);
  if (webhook) snap.webhook = webhook;
  const heap = await gauge(env.bins.webhook?.healthUrl, "nodejs_heap_size_used_bytes").catch(() => NaN);
  if (Number.isFinite(heap)) snap.webhookHeapMiB = heap / 2 ** 20;
  if (controller) snap.controller = controller;
  if (kcp) snap.kcp = kcp;
  env.log(
    `memory (${label}, lookup=${env.bins.lookup}): webhook ${webhook?.rssMiB.toFixed(1)} MiB ` +
      `(heap used ${snap.webhookHeapMiB?.toFixed(1)} MiB), controller ${controller?.rssMiB.toFixed(1)} MiB`,
  );
  return snap;
}

/** A distinct rule per index: VMs depend on VPCs through their own field, so every rule is a registry entry. */
function benchRule(i: number, networkPath: string): KObject {
  return dependencyRule(`bench-rule-${String(i).padStart(3, "0")}`, [
    { path: networkPath, resource: i % 2 === 0 ? "vpcs" : "subnets", field: `.spec.benchRef${i}.name` },
  ]);
}

/** Loads rules until `total` are registered (the VM rule counts), waits until both binaries have seen them all. */
export async function withRules(env: BenchEnv, total: number, concurrency: number): Promise<() => Promise<void>> {
  const compute = env.kcp.ws(PATHS.compute);
  const rules = Array.from({ length: Math.max(0, total - 1) }, (_, i) =>
    benchRule(i, env.topo.vars["NETWORK_PROVIDER_PATH"] ?? PATHS.network),
  );
  env.log(`memory: creating ${rules.length} more DependencyRules`);
  await pool(rules, concurrency, (r) => apply(compute, [r]));
  await waitFor(
    `both binaries to see ${total} rules`,
    async () =>
      ((await gauge(env.bins.webhook?.healthUrl, "dependency_webhook_registry_rules")) >= total &&
        (await gauge(env.bins.controller?.healthUrl, "dependency_controller_rules")) >= total) ||
      undefined,
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  return async () => {
    await pool(rules, concurrency, (r) =>
      compute.request("DELETE", `${RULES}/${r.metadata.name}`).then(() => undefined),
    );
  };
}
