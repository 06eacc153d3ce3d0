// A decision is counted once, by countDecision where the answer goes out (http/requests.ts): the DELETE handler only
// times and logs it (the rule handler takes no metrics at all). The handler's log line names the object as the decision read it.
import assert from "node:assert/strict";
import { describe, it, mock } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { deny, type AdmissionRequest } from "../../src/webhook/admission.ts";
import { createAdmissionHandler } from "../../src/webhook/deletion/handler.ts";
import type { DependentFinder } from "../../src/webhook/deletion/finder.ts";
import { unavailable } from "../../src/webhook/deletion/finder.ts";
import { DependentsIndex, INDEX_SYNCING } from "../../src/webhook/deletion/index/index.ts";
import { countDecision, createWebhookMetrics } from "../../src/webhook/metrics.ts";
import type { RuleEntry, RuleRegistry } from "../../src/webhook/rules/registry.ts";
import { fp, VM_DEPENDENT } from "./helpers-rules.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

const entry: RuleEntry = {
  rule: "net1/vm-needs-vpc",
  dependent: VM_DEPENDENT,
  fieldPaths: [fp(".spec.vpcRef.name")],
  enforcement: "Deny",
};
const registry = { find: () => ({ entries: [entry], pending: [] }) } as unknown as RuleRegistry;

function deleteVpc(o: { name?: string; annotations?: Record<string, string> } = {}): AdmissionRequest {
  return {
    uid: "uid-1",
    operation: "DELETE",
    resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
    name: o.name ?? "",
    oldObject: { metadata: { name: "my-vpc", annotations: o.annotations ?? { "kcp.io/cluster": "consumer1" } } },
  };
}

/** A handler over one fake finder, with the metrics and log lines it produced. */
function handlerWith(finder: DependentFinder) {
  const registryOfMetrics = new Registry();
  const metrics = createWebhookMetrics(registryOfMetrics);
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "info" },
    { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
  );
  const handler = createAdmissionHandler({ registry: () => registry, finder, logger, metrics });
  const series = async (name: string) =>
    (await registryOfMetrics.getSingleMetric(name)?.get())?.values.filter((v) => v.value > 0) ?? [];
  const text = () => registryOfMetrics.metrics();
  return { handler, metrics, lines, series, text };
}

const oneVm: DependentFinder = {
  find: () => Promise.resolve({ ok: true, dependents: [{ name: "vm-1", field: ".spec.vpcRef.name" }], complete: true }),
};

describe("decision counting", () => {
  it("the DELETE handler times a decision but does not count it", async () => {
    const { handler, series, text } = handlerWith(oneVm);
    const decision = await handler(deleteVpc(), undefined);
    assert.equal(decision.allowed, false);
    assert.deepEqual(await series("dependency_webhook_decisions_total"), []);
    assert.deepEqual(await series("dependency_webhook_rule_decisions_total"), []);
    assert.match(await text(), /dependency_webhook_decision_duration_seconds_count\{outcome="denied"\} 1/);
  });

  it("countDecision counts by outcome and reason, and each refusing rule once", async () => {
    const metrics = createWebhookMetrics(new Registry());
    countDecision(metrics, deny("referenced", 409, "Conflict", "m", { rules: ["a/r1", "b/r2"] }));
    countDecision(metrics, deny("index-unavailable", 503, "ServiceUnavailable", "m"));
    const counted = (await metrics.decisions.get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(counted, [
      [{ outcome: "denied", reason: "referenced" }, 1],
      [{ outcome: "errored", reason: "index-unavailable" }, 1],
    ]);
    countDecision(metrics, deny("referenced", 409, "Conflict", "m"));
    const again = (await metrics.decisions.get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(again[0], [{ outcome: "denied", reason: "referenced" }, 2], "counts kept across reads");
    const byRule = (await metrics.ruleDecisions.get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(byRule, [
      [{ rule: "a/r1", outcome: "denied" }, 1],
      [{ rule: "b/r2", outcome: "denied" }, 1],
    ]);
  });
});

describe("the handler's log line and the finder's answers", () => {
  it("names the object as the decision read it (a DELETECOLLECTION item has no request name)", async () => {
    const { handler, lines } = handlerWith(oneVm);
    await handler(deleteVpc({ name: "" }), undefined);
    const line = lines.find((l) => l["msg"] === "delete denied: still referenced");
    assert.equal(line?.["name"], "my-vpc");
    assert.equal(line?.["workspace"], "consumer1");
  });

  it("logs a skip-protection with the object's workspace", async () => {
    const { handler, lines } = handlerWith(oneVm);
    const annotations = { "kcp.io/cluster": "consumer1", "dependencies.opendefense.cloud/skip-protection": "true" };
    const decision = await handler(deleteVpc({ annotations }), undefined);
    assert.equal(decision.allowed, true);
    const line = lines.find((l) => l["msg"] === "delete allowed: skip-protection annotation set");
    assert.equal(line?.["workspace"], "consumer1");
  });

  it("turns 'unavailable' into a 503 and a thrown error into a 500, each a failed lookup", async () => {
    const syncing: DependentFinder = {
      find: () => Promise.resolve(unavailable("syncing", INDEX_SYNCING, "detail")),
    };
    const a = handlerWith(syncing);
    const d503 = await a.handler(deleteVpc(), undefined);
    assert.ok(!d503.allowed && d503.code === 503 && d503.reason === "index-unavailable");
    assert.match(d503.message, /^cannot check dependents of vpcs\/my-vpc yet: the dependents index is still syncing/);
    const throwing: DependentFinder = { find: () => Promise.reject(new Error("403 Forbidden")) };
    const b = handlerWith(throwing);
    const d500 = await b.handler(deleteVpc(), undefined);
    assert.ok(!d500.allowed && d500.code === 500 && d500.reason === "lookup-error");
    for (const h of [a, b]) assert.equal((await h.metrics.lookupErrors.get()).values[0]?.value, 1);
  });

  it("a 503 or 500 names the object and its type to the deleter, never the dependent type, rule or provider", async () => {
    // The real index, its watch of the rule's VMs failing on the consumer's shard; then a live list that fails.
    const { factory, built } = fakeWatches();
    const index = new DependentsIndex({ watch: factory, logger: pino({ level: "silent" }) });
    index.follow(registryOf(vmType(".spec.vpcRef.name")));
    built[0]!.watch.endpoint("https://shard-a/services/apiexport/x", [vmObject("consumer1", "vm-1", "my-vpc")], {
      error: "watch: 403 Forbidden",
    });
    const failing = handlerWith(index);
    const throwing = handlerWith({ find: () => Promise.reject(new Error("403 Forbidden")) });
    const refusals = [
      [failing, await failing.handler(deleteVpc(), undefined)],
      [throwing, await throwing.handler(deleteVpc(), undefined)],
    ] as const;
    const secrets = [VM_DEPENDENT.group, VM_DEPENDENT.resource, VM_DEPENDENT.exportCluster, entry.rule, "shard-a"];
    for (const [h, d] of refusals) {
      assert.ok(!d.allowed && (d.code === 503 || d.code === 500), JSON.stringify(d));
      assert.match(d.message, /^cannot check dependents of vpcs\/my-vpc/);
      for (const secret of secrets) assert.ok(!d.message.includes(secret), `names ${secret}: ${d.message}`);
      // The log keeps what the deleter is not told.
      const line = h.lines.find((l) => l["msg"] === "delete denied: cannot decide");
      assert.ok(String(line?.["detail"]).includes(entry.rule) && String(line?.["detail"]).includes("virtualmachines"));
    }
    assert.equal(
      refusals[0][1].allowed ? "" : refusals[0][1].message,
      "cannot check dependents of vpcs/my-vpc yet: the dependents index is not readable, retry in a few seconds",
    );
  });
});

describe("the DELETE log line", () => {
  const HUGE = "x".repeat(512 * 1024);
  const lineSize = (lines: Record<string, unknown>[], msg: string) => {
    const line = lines.find((l) => l["msg"] === msg);
    assert.ok(line, `a "${msg}" line was logged`);
    return JSON.stringify(line).length;
  };

  it("clips a message and detail built from the caller's text", async () => {
    const huge: DependentFinder = { find: () => Promise.resolve(unavailable("failing", HUGE, HUGE)) };
    const { handler, lines } = handlerWith(huge);
    await handler(deleteVpc(), undefined);
    assert.ok(lineSize(lines, "delete denied: cannot decide") < 8 * 1024);
  });

  it("clips each blocker name and cuts the list", async () => {
    const many: DependentFinder = {
      find: () =>
        Promise.resolve({
          ok: true,
          dependents: Array.from({ length: 200 }, (_, i) => ({ name: `${HUGE}-${i}`, field: ".spec.vpcRef.name" })),
          complete: true,
        }),
    };
    const { handler, lines } = handlerWith(many);
    await handler(deleteVpc(), undefined);
    assert.ok(lineSize(lines, "delete denied: still referenced") < 16 * 1024);
  });
});

describe("the lookups' deadline", () => {
  /** A finder that answers only when its signal aborts, remembering the signals it was given. */
  function hanging() {
    const signals: AbortSignal[] = [];
    const finder: DependentFinder = {
      find: (_lookup, _limit, signal) =>
        new Promise((_resolve, reject) => {
          signals.push(signal!);
          signal!.addEventListener("abort", () => reject(signal!.reason as Error), { once: true });
        }),
    };
    return { finder, signals };
  }

  it("refuses a DELETE whose lookup does not answer in time, saying so; reviews started together share one timer", async () => {
    const { finder, signals } = hanging();
    const metrics = createWebhookMetrics(new Registry());
    const logger = pino({ level: "silent" });
    const handler = createAdmissionHandler({ registry: () => registry, finder, logger, metrics, lookupTimeoutMs: 20 });
    const decisions = await Promise.all([handler(deleteVpc(), undefined), handler(deleteVpc(), undefined)]);
    for (const d of decisions) {
      assert.equal(d.allowed, false);
      assert.match(d.allowed ? "" : (d.detail ?? d.message), /no answer within 20 ms/);
    }
    assert.equal(signals.length, 2);
    assert.equal(signals[0], signals[1], "one deadline signal for reviews started in the same window");
  });

  it("never aborts the signal of a window whose lookups are over; a lookup still running is cut off", async () => {
    // Fake timers and a fake clock: window 1 (a review answered at once) at t = 0, window 2 (a review that hangs) at
    // t = 200, then past both deadlines. Before, window 1's timer fired 8 s later and aborted its signal for nobody.
    let now = 0;
    mock.method(performance, "now", () => now);
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const signals: AbortSignal[] = [];
      let hang = false;
      const finder: DependentFinder = {
        find: (_lookup, _limit, signal) => {
          signals.push(signal!);
          if (!hang) return Promise.resolve({ ok: true, dependents: [], complete: true });
          return new Promise((_resolve, reject) =>
            signal!.addEventListener("abort", () => reject(signal!.reason as Error), { once: true }),
          );
        },
      };
      const metrics = createWebhookMetrics(new Registry());
      const logger = pino({ level: "silent" });
      const handler = createAdmissionHandler({
        registry: () => registry,
        finder,
        logger,
        metrics,
        lookupTimeoutMs: 20,
      });
      assert.equal((await handler(deleteVpc(), undefined)).allowed, true);
      now = 200;
      hang = true;
      const late = handler(deleteVpc(), undefined);
      mock.timers.tick(1_000);
      const decision = await late;
      assert.equal(decision.allowed, false, "the hanging lookup is still cut off at its deadline");
      assert.match(decision.allowed ? "" : (decision.detail ?? decision.message), /no answer within 20 ms/);
      assert.equal(signals.length, 2);
      assert.notEqual(signals[0], signals[1]);
      assert.equal(signals[0]?.aborted, false, "window 1's lookups were over: its signal is never aborted");
    } finally {
      mock.timers.reset();
      mock.restoreAll();
    }
  });
});
