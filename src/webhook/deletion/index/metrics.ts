// The dependents index's gauges, read from the index when Prometheus scrapes (nothing to keep in step).
import { Counter, Gauge, type Registry } from "prom-client";
import type { DependentsIndex } from "./index.ts";

export function registerIndexMetrics(registry: Registry, index: DependentsIndex): void {
  new Gauge({
    name: "dependency_webhook_index_dependents",
    help: "Dependents held in the dependents index, over all types and shards",
    registers: [registry],
    collect() {
      this.set(index.size());
    },
  });
  new Gauge({
    name: "dependency_webhook_index_types",
    help: "Dependent types the index watches, by state: ready, syncing, or failing (DELETEs they cover get 503)",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const counts = { ready: 0, syncing: 0, failing: 0 };
      for (const t of index.health()) counts[t.state]++;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  new Counter({
    name: "dependency_webhook_index_confirmations_total",
    help: "Found dependents read again before a denial, by result: kept, gone (the index lagged), error (kept)",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [result, n] of Object.entries(index.confirmations)) this.inc({ result }, n);
    },
  });
}
