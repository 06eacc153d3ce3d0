// What the per-review CPU cuts (issue 30) must not change: an allowed reply written from a fixed text is byte for byte
// the JSON of the AdmissionReview reviewReply builds (fast-check over uids, warnings and denials), and decision and
// lookup times kept as plain numbers until a scrape show the same histogram series and values as observing each one
// in prom-client directly, with no more than MAX_PENDING_OBSERVATIONS ever waiting between scrapes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Histogram, Registry } from "prom-client";
import { allow, badRequest, referenced, type Decision } from "../../src/webhook/admission.ts";
import { reviewReply, reviewReplyText } from "../../src/webhook/http/review.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { MAX_PENDING_OBSERVATIONS, Observations } from "../../src/webhook/tallies.ts";

const decision: fc.Arbitrary<Decision> = fc.oneof(
  fc.constant(allow("no-dependents")),
  fc.constant(allow("no-rules")),
  fc.array(fc.string(), { minLength: 1, maxLength: 3 }).map((w) => allow("warned", w, ["net1/r"])),
  fc.string().map((m) => badRequest(m)),
  fc.string().map((m) => referenced(m, { blockers: ["VirtualMachine/a"], causes: [] })),
);

describe("allowed reply text", () => {
  it("is the JSON of reviewReply for any uid and decision", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), decision, (uid, d) => {
        assert.equal(reviewReplyText(uid, d), JSON.stringify(reviewReply(uid, d)));
      }),
      { numRuns: 5_000 },
    );
  });
});

const bucketsOf = (name: string, text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .sort();

describe("batched histogram observations", () => {
  it("scrape as the same series and values as direct observations", async () => {
    const batched = new Registry();
    const metrics = createWebhookMetrics(batched);
    const direct = new Registry();
    const opts = {
      labelNames: ["outcome"] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    };
    const h = new Histogram({ name: "dependency_webhook_decision_duration_seconds", help: "h", ...opts });
    direct.registerMetric(h);
    const seconds = fc.sample(fc.double({ min: 0, max: 2, noNaN: true }), 3_000);
    const outcomes = ["allowed", "denied", "errored"] as const;
    for (const [i, s] of seconds.entries()) {
      const outcome = outcomes[i % 3] as string;
      metrics.decisionTimes.observe(outcome, s);
      h.observe({ outcome }, s);
      // Scrape now and then: what waited so far is handed over, and the next scrape adds only what came after.
      if (i % 700 === 0) await batched.metrics();
    }
    const name = "dependency_webhook_decision_duration_seconds";
    const [a, b] = [await batched.metrics(), await direct.metrics()];
    // Sums are added in another order, so compare them to rounding; counts and buckets exactly.
    const exact = (t: string) => bucketsOf(name, t).filter((l) => !l.startsWith(`${name}_sum`));
    assert.deepEqual(exact(a), exact(b));
    assert.equal(exact(a).length, 3 * 14); // 3 outcomes: 12 buckets, +Inf and the count
    const sums = (t: string) => bucketsOf(`${name}_sum`, t).map((l) => Number(l.split(" ")[1]));
    sums(a).forEach((s, i) => assert.ok(Math.abs(s - (sums(b)[i] ?? NaN)) < 1e-9));
  });

  it("hands them over once MAX_PENDING_OBSERVATIONS wait, scraped or not", async () => {
    const registry = new Registry();
    const observations = new Observations<"result">((result) => ({ result }));
    const h = observations.into(new Histogram({ name: "t", help: "t", labelNames: ["result"], registers: [] }));
    registry.registerMetric(h);
    for (let i = 0; i < MAX_PENDING_OBSERVATIONS - 1; i++) observations.observe("ok", 0.001);
    assert.equal(observations.waiting, MAX_PENDING_OBSERVATIONS - 1);
    // Without a collect hook on `h`, only the bound hands them over.
    assert.equal((await h.get()).values.find((v) => v.metricName === "t_count")?.value ?? 0, 0);
    observations.observe("ok", 0.001);
    assert.equal(observations.waiting, 0);
    const count = (await h.get()).values.find((v) => v.metricName === "t_count")?.value;
    assert.equal(count, MAX_PENDING_OBSERVATIONS);
  });
});
