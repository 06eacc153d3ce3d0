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
    help: "Dependents the index keeps unread, by reason: names (names too many objects), budget (its workspace's index budget is spent), share (its workspace is past its share of the replica's index memory); their workspace's deletes of that type get 503",
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
  registerCeilingMetrics(registry, index);
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

/** The replica's index memory ceiling (ceiling.ts): no labels, so nothing here grows with workspaces. */
function registerCeilingMetrics(registry: Registry, index: DependentsIndex): void {
  const ledger = index.ledger;
  if (!ledger) return;
  new Gauge({
    name: "dependency_webhook_index_memory_bytes",
    help: "Heap bytes the readable dependents index holds by its cost model, over all types and shards, against dependency_webhook_index_memory_limit_bytes",
    registers: [registry],
    collect() {
      this.set(ledger.total());
    },
  });
  new Gauge({
    name: "dependency_webhook_index_memory_limit_bytes",
    help: "The replica's index memory ceiling (--index-memory-limit), shared fairly between rule authors, then their consumer workspaces",
    registers: [registry],
    collect() {
      this.set(ledger.ceilingBytes);
    },
  });
  new Counter({
    name: "dependency_webhook_index_share_demotions_total",
    help: "Times a consumer workspace past its share of the index memory had one dependent type kept unread to make room for a workspace within its share",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(ledger.demotions);
    },
  });
}
