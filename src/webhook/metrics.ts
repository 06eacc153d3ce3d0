// Prometheus metrics of the webhook, registered on a passed-in Registry (never the global one) so tests stay isolated.
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from "prom-client";
import { outcomeOf, type Decision } from "./admission.ts";
import { Observations, Tally } from "./tallies.ts";

// The rule source's per-endpoint (per-shard) gauge, apart so a test can register it on its own.
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

/**
 * How often the process metrics' event-loop delay monitor (nodejs_eventloop_lag_*) samples. prom-client's default,
 * 10 ms, is a timer firing 100 times a second, which cost the idle webhook 33 µs of CPU per 10 ms here: at kcp's pace
 * of about one review per 10 ms, as much as a fifth of the review's own cost (bench/README.md). 100 ms costs 4 µs, and
 * a stall of the event loop still shows as a late sample.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** Node's process metrics (CPU, memory, handles, event-loop delay, GC), registered on `registry`. */
export function processMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
}

export interface WebhookMetrics extends RuleEndpointMetrics {
  /** Every HTTP response, by the code it carries (a review's own status code, or the transport's refusal). */
  responses: Counter<"code">;
  /** Counts one response in `responses` (a plain count, added when the counter is read). */
  countResponse(code: number): void;
  decisions: Counter<"outcome" | "reason">;
  /** Counts one decision in `decisions` (likewise); use countDecision. */
  decisionTally: Tally<"outcome" | "reason">;
  /** Requests refused before any decision, by reason (too-many-reviews, body-too-large, unauthenticated, ...). */
  refusals: Counter<"reason">;
  /** Refusals and warnings by rule (`<logical cluster>/<name>`), so a provider sees which rule blocks how often. */
  ruleDecisions: Counter<"rule" | "outcome">;
  /** The label value for a rule: its key for the first MAX_RULE_LABELS rules seen, then "other" (bounded series). */
  ruleLabel(rule: string): string;
  decisionSeconds: Histogram<"outcome">;
  /** Observes one decision's time in `decisionSeconds` (plain numbers, handed to it when it is read). */
  decisionTimes: Observations<"outcome">;
  lookupSeconds: Histogram<"result">;
  /** Observes one lookup's time in `lookupSeconds`, likewise. */
  lookupTimes: Observations<"result">;
  lookupErrors: Counter;
  registryRules: Gauge;
  registryEntries: Gauge;
  registryProblems: Gauge;
  rulesNotEnforced: Gauge;
  certificateReloads: Counter<"result">;
  /** Bytes of request bodies received and held now, against the budget shared by all requests. */
  bodyBytesHeld: Gauge;
  /** Where `bodyBytesHeld` reads the bytes held when it is scraped (the server's body budget). */
  readBodyBytesFrom(held: () => number): void;
  /** Connections open, handshakes included, against the connection cap. */
  connectionsOpen: Gauge;
}

/**
 * Counts one answered review by outcome and reason, and by rule for the rules that refused or warned. Called once per
 * review, where the answer goes out (http/requests.ts), so every decision is counted exactly once whoever made it.
 */
export function countDecision(metrics: WebhookMetrics, decision: Decision): void {
  const outcome = outcomeOf(decision);
  metrics.decisionTally.add(`${outcome} ${decision.reason}`, () => ({ outcome, reason: decision.reason }));
  for (const rule of decision.rules ?? [])
    metrics.ruleDecisions.inc({ rule: metrics.ruleLabel(rule), outcome: decision.allowed ? "warned" : "denied" });
}

/** Rules get their own series up to this many; a replica sees at most as many rules as providers wrote. */
export const MAX_RULE_LABELS = 500;

type Registers = Registry[];

export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const registers = [registry];
  return {
    ...transportMetrics(registers),
    ...ruleMetrics(registers),
    ...decisionMetrics(registers),
    ...registryMetrics(registers),
    ...ruleEndpointMetrics(registers),
  };
}

/** What the HTTP layer counts: refusals before any decision, every response by code, certificate reloads, body bytes and connections held. */
function transportMetrics(registers: Registers) {
  const responseTally = new Tally<"code">();
  // Read when scraped rather than set as bytes come and go: three gauge updates a review otherwise.
  let bodyBytes: (() => number) | undefined;
  return {
    readBodyBytesFrom: (held: () => number) => void (bodyBytes = held),
    countResponse: (code: number) => responseTally.add(String(code), () => ({ code: String(code) })),
    refusals: new Counter({
      name: "dependency_webhook_refusals_total",
      help: "Requests refused before any decision (over a limit, unauthenticated), by reason.",
      labelNames: ["reason"] as const,
      registers,
    }),
    responses: new Counter({
      name: "dependency_webhook_responses_total",
      help: "HTTP responses by code: 200 allowed, a denial's code (409, 503, ...), or a transport refusal (400, 404, 413, ...).",
      labelNames: ["code"] as const,
      registers,
      collect() {
        responseTally.flush(this);
      },
    }),
    certificateReloads: new Counter({
      name: "dependency_webhook_certificate_reloads_total",
      help: "Serving certificate reloads after the files changed, by result (success, error).",
      labelNames: ["result"] as const,
      registers,
    }),
    bodyBytesHeld: new Gauge({
      name: "dependency_webhook_body_bytes_held",
      help: "Bytes of request bodies received and not yet released, against the budget all requests share (16 MiB).",
      registers,
      collect() {
        if (bodyBytes) this.set(bodyBytes());
      },
    }),
    connectionsOpen: new Gauge({
      name: "dependency_webhook_connections_open",
      help: "Connections open on the review port, handshakes included, against the cap (256).",
      registers,
    }),
  };
}

/** Refusals and warnings by rule, with a bounded set of rule labels. */
function ruleMetrics(registers: Registers): Pick<WebhookMetrics, "ruleDecisions" | "ruleLabel"> {
  const labelled = new Set<string>();
  return {
    ruleDecisions: new Counter({
      name: "dependency_webhook_rule_decisions_total",
      help: `Referenced deletes by rule and outcome (denied, warned); rules past the first ${MAX_RULE_LABELS} are "other".`,
      labelNames: ["rule", "outcome"],
      registers,
    }),
    ruleLabel(rule) {
      if (labelled.has(rule)) return rule;
      if (labelled.size >= MAX_RULE_LABELS) return "other";
      labelled.add(rule);
      return rule;
    },
  };
}

/** DELETE decisions and the lookups behind them. */
function decisionMetrics(registers: Registers) {
  const decisionTally = new Tally<"outcome" | "reason">();
  const decisionTimes = new Observations<"outcome">((outcome) => ({ outcome }));
  const lookupTimes = new Observations<"result">((result) => ({ result }));
  return {
    decisionTally,
    decisionTimes,
    lookupTimes,
    decisions: new Counter({
      name: "dependency_webhook_decisions_total",
      help: "DELETE admission decisions by outcome (allowed, denied, errored) and reason.",
      labelNames: ["outcome", "reason"] as const,
      registers,
      collect() {
        decisionTally.flush(this);
      },
    }),
    decisionSeconds: decisionTimes.into(
      new Histogram({
        name: "dependency_webhook_decision_duration_seconds",
        help: "Time to decide one admission review, lookups included.",
        labelNames: ["outcome"] as const,
        buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
        collect() {
          decisionTimes.flush();
        },
      }),
    ),
    lookupSeconds: lookupTimes.into(
      new Histogram({
        name: "dependency_webhook_lookup_duration_seconds",
        help: "Time to list one dependent type in a consumer workspace.",
        labelNames: ["result"] as const,
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
        collect() {
          lookupTimes.flush();
        },
      }),
    ),
    lookupErrors: new Counter({
      name: "dependency_webhook_lookup_errors_total",
      help: "Dependent lookups that failed (anything but 404); each one denies the DELETE.",
      registers,
    }),
  };
}

/** The size of the rule registry. */
function registryMetrics(registers: Registers) {
  return {
    registryRules: new Gauge({
      name: "dependency_webhook_registry_rules",
      help: "DependencyRules registered.",
      registers,
    }),
    registryEntries: new Gauge({
      name: "dependency_webhook_registry_entries",
      help: "Registered (rule, provider workspace, protected group/resource) entries.",
      registers,
    }),
    registryProblems: new Gauge({
      name: "dependency_webhook_registry_problems",
      help: "Rules or dependencies left out of the registry because they are malformed.",
      registers,
    }),
    rulesNotEnforced: new Gauge({
      name: "dependency_webhook_rules_not_enforced",
      help: "Rules with a part not enforced for a fault of their own (path never resolved, checks declined, invalid dependent); their statuses say why.",
      registers,
    }),
  };
}
