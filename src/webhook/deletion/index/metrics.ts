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
  new Gauge({
    name: "dependency_webhook_index_unreadable_dependents",
    help: "Dependents the index keeps unread, by reason: names (names too many objects), budget (its workspace's index budget is spent); their workspace's deletes of that type get 503",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      for (const [reason, n] of Object.entries(index.unreadable().objects)) this.set({ reason }, n);
    },
  });
  new Gauge({
    name: "dependency_webhook_index_workspaces_unreadable",
    help: "Consumer workspaces (counted once per dependent type) with dependents the index keeps unread, by reason; their deletes of that type get 503",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      for (const [reason, n] of Object.entries(index.unreadable().workspaces)) this.set({ reason }, n);
    },
  });
  new Counter({
    name: "dependency_webhook_index_confirmations_total",
    help: "Found dependents read again before a denial, by result: kept, gone (the index lagged), error (kept; also an object over the read cap), limited (not read: the workspace's rate was spent; kept)",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [result, n] of Object.entries(index.confirmations)) this.inc({ result }, n);
      this.inc({ result: "limited" }, index.confirmationsLimited);
    },
  });
}
