// Keeps the rule source's per-endpoint gauge (declared in ../metrics.ts) equal to what the source sees now.
import type { Gauge } from "prom-client";

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
