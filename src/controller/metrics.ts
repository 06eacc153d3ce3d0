// The controller's Prometheus metrics, registered on a passed-in Registry (no global state, so tests stay isolated).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface ControllerMetrics {
  /** Completed reconcile passes by result: success, error, incomplete (waiting for caches or after a conflict). */
  reconciles: Counter<"result">;
  /** Failures by reason: resolve_workspace, write_webhook_configuration, write_status, ca_bundle, reconcile. */
  errors: Counter<"reason">;
  /** Webhook configurations writes by action (create, update, delete). */
  writes: Counter<"action">;
  /** Rule status writes; with nothing changed in kcp this stays put (level-triggered, no write without a change). */
  statusWrites: Counter;
  /** Provider workspaces whose webhook configuration is as desired after the last pass. */
  webhookConfigurations: Gauge;
  /** DependencyRules seen in the last pass. */
  rules: Gauge;
  passDuration: Histogram;
  /** 1 while this replica holds the leader lease (or leader election is off). */
  leader: Gauge;
}

export function createMetrics(registry: Registry): ControllerMetrics {
  const registers = [registry];
  return {
    reconciles: new Counter({
      name: "dependency_controller_reconciles_total",
      help: "Reconcile passes by result.",
      labelNames: ["result"],
      registers,
    }),
    errors: new Counter({
      name: "dependency_controller_errors_total",
      help: "Reconcile errors by reason.",
      labelNames: ["reason"],
      registers,
    }),
    writes: new Counter({
      name: "dependency_controller_webhook_configuration_writes_total",
      help: "ValidatingWebhookConfiguration writes by action.",
      labelNames: ["action"],
      registers,
    }),
    statusWrites: new Counter({
      name: "dependency_controller_status_writes_total",
      help: "DependencyRule status writes.",
      registers,
    }),
    webhookConfigurations: new Gauge({
      name: "dependency_controller_webhook_configurations",
      help: "Provider workspaces whose ValidatingWebhookConfiguration is installed as desired.",
      registers,
    }),
    rules: new Gauge({ name: "dependency_controller_rules", help: "DependencyRules seen.", registers }),
    passDuration: new Histogram({
      name: "dependency_controller_reconcile_duration_seconds",
      help: "Duration of reconcile passes.",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    leader: new Gauge({
      name: "dependency_controller_leader",
      help: "1 while this replica is the leader.",
      registers,
    }),
  };
}
