// One gauge for the rule source's endpoints (one per shard), kept apart from metrics.ts so it can be wired in with
// one line: `...ruleEndpointMetrics(registers)` in createWebhookMetrics, and `RuleEndpointMetrics` in its interface.
import { Gauge, type Registry } from "prom-client";

export const RULE_ENDPOINT_UNSYNCED = "dependency_webhook_rule_endpoint_unsynced";

export interface RuleEndpointMetrics {
  /** 1 per endpoint whose DependencyRule list/watch is failing (its rules cannot be seen), 0 per healthy one. */
  ruleEndpointUnsynced: Gauge<"endpoint">;
}

export function ruleEndpointMetrics(registers: Registry[]): RuleEndpointMetrics {
  return {
    ruleEndpointUnsynced: new Gauge({
      name: RULE_ENDPOINT_UNSYNCED,
      help:
        "1 while the DependencyRule list/watch of this virtual workspace endpoint (one per shard) is failing: its " +
        "rules may be stale, and reviews they may decide are refused with 503; 0 when it is in sync.",
      labelNames: ["endpoint"] as const,
      registers,
    }),
  };
}

/** Sets the gauge to exactly these endpoints: 1 for the broken ones, 0 for the rest; forgets endpoints gone. */
export function reportEndpoints(
  gauge: Gauge<"endpoint"> | undefined,
  endpoints: readonly string[],
  broken: ReadonlySet<string>,
): void {
  if (!gauge) return;
  gauge.reset();
  for (const endpoint of new Set([...endpoints, ...broken])) gauge.set({ endpoint }, broken.has(endpoint) ? 1 : 0);
}
