// The transport under strangers: slow uploads hold no review slot, a trickle is cut off (a fake clock moves time),
// rule reviews have their own pool, queued reviews wait then get a slot, and the open-request gauge stays bounded.
// No test measures time: each waits on a condition.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type http from "node:http";
import https from "node:https";
import { setTimeout as delay } from "node:timers/promises";
import { Registry } from "prom-client";
import type { Decision } from "../../src/webhook/admission.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { createOpenRequests, MAX_ORIGIN_LABELS } from "../../src/webhook/http/origins.ts";
import { startWebhookServer, type WebhookServer, type WebhookServerOptions } from "../../src/webhook/http/server.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { deleteReview, servingCertSuite } from "../support/serving-cert.ts";

const cert = servingCertSuite("webhook-transport-");
const review = deleteReview;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: http.IncomingHttpHeaders;
}

/** A POST; `trickle` sends only the first byte of the body and leaves the request open. */
function post(port: number, body: string, opts: { path?: string; trickle?: boolean; agent?: https.Agent } = {}) {
  let req!: ReturnType<typeof https.request>;
  const answer = new Promise<Answer>((resolve, reject) => {
    req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: opts.path ?? "/validate/net1",
        method: "POST",
        ca: [cert.ca],
        agent: opts.agent ?? false,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>,
            headers: res.headers,
          }),
        );
      },
    );
    req.on("error", reject);
    if (opts.trickle) req.write(body.slice(0, 1));
    else req.end(body);
  });
  return { answer, req };
}

async function waitUntil(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (await cond()) return;
    await delay(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The open-request gauge's value for a pool and stage, summed over origins. */
async function open(registry: Registry, pool: string, stage: string): Promise<number> {
  const metric = await registry.getSingleMetric("dependency_webhook_requests_open")?.get();
  return (metric?.values ?? [])
    .filter((v) => v.labels["pool"] === pool && v.labels["stage"] === stage)
    .reduce((sum, v) => sum + v.value, 0);
}

interface Harness {
  server: WebhookServer;
  clock: FakeClock;
  registry: Registry;
  refusals: string[];
  /** Rule reviews the stub holds until released. */
  heldRules: (() => void)[];
  heldDeletes: (() => void)[];
}

async function start(opts: Partial<WebhookServerOptions> & { holdDeletes?: boolean } = {}): Promise<Harness> {
  const clock = new FakeClock();
  const registry = new Registry();
  const refusals: string[] = [];
  const heldRules: (() => void)[] = [];
  const heldDeletes: (() => void)[] = [];
  const allowed: Decision = { allowed: true, reason: "no-dependents" };
  const server = await startWebhookServer({
    host: "127.0.0.1",
    port: 0,
    tls: cert.files,
    handler: () =>
      opts.holdDeletes ? new Promise((resolve) => heldDeletes.push(() => resolve(allowed))) : Promise.resolve(allowed),
    ruleHandler: () => new Promise((resolve) => heldRules.push(() => resolve({ allowed: true, reason: "rule-valid" }))),
    logger: silentLogger(),
    metrics: createWebhookMetrics(registry),
    clock,
    openRequests: createOpenRequests(registry),
    onRefusal: (reason) => refusals.push(reason),
    ...opts,
  });
  return { server, clock, registry, refusals, heldRules, heldDeletes };
}

describe("webhook transport: strangers cannot starve reviews", () => {
  it("16 slow uploads take no review slot: a genuine review is answered, not 429; the trickles are then cut off", async () => {
    const h = await start(); // 16 review slots, the default
    const slow = Array.from({ length: 16 }, (_, i) => post(h.server.port, review(`slow-${i}`), { trickle: true }));
    try {
      await waitUntil(async () => (await open(h.registry, "deletes", "receiving")) === 16, "16 uploads receiving");
      const genuine = await post(h.server.port, review("genuine")).answer;
      assert.equal(genuine.status, 200);
      assert.deepEqual(genuine.body["response"], { uid: "genuine", allowed: true });
      assert.deepEqual(h.refusals, []);

      // Past the grace, a body that has sent 1 byte is far below the minimum pace: 408, and the connection closes.
      await h.clock.advance(5_000);
      for (const s of slow) assert.equal((await s.answer).status, 408);
      assert.deepEqual(h.refusals, Array(16).fill("body-too-slow"));
      await waitUntil(async () => (await open(h.registry, "deletes", "receiving")) === 0, "no upload receiving");
    } finally {
      for (const s of slow) s.req.destroy();
      await h.server.close();
    }
  });

  it("a body that keeps the pace but is not whole by the deadline gets 408", async () => {
    const h = await start({ bodyTimeoutMs: 5_000, minBodyBytesPerSecond: 1 });
    const body = review("late") + " ".repeat(100);
    const s = post(h.server.port, body, { trickle: true });
    s.req.write(body.slice(1, 100));
    try {
      await waitUntil(async () => (await open(h.registry, "deletes", "receiving")) === 1, "the upload receiving");
      await h.clock.advance(5_000);
      const answer = await s.answer;
      assert.equal(answer.status, 408);
      assert.match(String(answer.body["message"]), /not received whole within 5000 ms/);
    } finally {
      s.req.destroy();
      await h.server.close();
    }
  });

  it("rule reviews have their own pool: when it is full, DELETE reviews are still decided", async () => {
    const h = await start({ maxConcurrentRuleReviews: 1, maxQueuedReviews: 0 });
    try {
      const first = post(h.server.port, review("rule-1"), { path: "/validate-rules" });
      await waitUntil(() => h.heldRules.length === 1, "a rule review deciding");
      const second = await post(h.server.port, review("rule-2"), { path: "/validate-rules" }).answer;
      assert.equal(second.status, 429);
      assert.match(String(second.body["message"]), /deciding 1 DependencyRule reviews already/);
      assert.deepEqual(h.refusals, ["too-many-rule-reviews"]);
      const del = await post(h.server.port, review("delete-1")).answer;
      assert.deepEqual(del.body["response"], { uid: "delete-1", allowed: true });
      h.heldRules.splice(0).forEach((release) => release());
      assert.equal((await first.answer).status, 200);
    } finally {
      h.heldRules.splice(0).forEach((release) => release());
      await h.server.close();
    }
  });

  it("a review whose body is in waits for a slot; a full queue is 429 at once; a long wait is 429", async () => {
    const h = await start({ maxConcurrentReviews: 1, maxQueuedReviews: 1, holdDeletes: true });
    try {
      const first = post(h.server.port, review("d-1"));
      await waitUntil(() => h.heldDeletes.length === 1, "a review deciding");
      const queued = post(h.server.port, review("d-2"));
      await waitUntil(async () => (await open(h.registry, "deletes", "queued")) === 1, "a review queued");
      const over = await post(h.server.port, review("d-3")).answer;
      assert.equal(over.status, 429);
      h.heldDeletes.shift()?.();
      assert.equal((await first.answer).status, 200);
      await waitUntil(() => h.heldDeletes.length === 1, "the queued review deciding");
      const waiting = post(h.server.port, review("d-4"));
      await waitUntil(async () => (await open(h.registry, "deletes", "queued")) === 1, "another review queued");
      await h.clock.advance(2_000);
      assert.equal((await waiting.answer).status, 429);
      h.heldDeletes.shift()?.();
      assert.deepEqual((await queued.answer).body["response"], { uid: "d-2", allowed: true });
      assert.deepEqual(h.refusals, ["too-many-reviews", "too-many-reviews"]);
    } finally {
      h.heldDeletes.splice(0).forEach((release) => release());
      await h.server.close();
    }
  });
});

describe("open-request gauge", () => {
  it("gives at most MAX_ORIGIN_LABELS origins their own series; the rest share other; ended origins are dropped", async () => {
    const registry = new Registry();
    const tracker = createOpenRequests(registry);
    const requests = Array.from({ length: MAX_ORIGIN_LABELS + 10 }, (_, i) => {
      const r = tracker.begin(`::ffff:10.0.0.${i}`, "deletes");
      r.stage("receiving");
      return r;
    });
    const values = async () => (await registry.getSingleMetric("dependency_webhook_requests_open")!.get()).values;
    const origins = new Set((await values()).map((v) => v.labels["origin"]));
    assert.equal(origins.size, MAX_ORIGIN_LABELS + 1);
    assert.ok(origins.has("10.0.0.0") && origins.has("other"));
    assert.equal((await values()).find((v) => v.labels["origin"] === "other")?.value, 10);
    for (const r of requests) r.end();
    const left = (await values()).filter((v) => v.value !== 0);
    assert.deepEqual(left, []);
    assert.ok((await values()).length <= 3, "only the shared series may stay");
  });
});

describe("keep-alive", () => {
  it("keeps an idle connection past kcp's client's 90 s, so the client closes first and no review meets a closing socket", async () => {
    const h = await start();
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answer = await post(h.server.port, review("kept-alive"), { agent }).answer;
      assert.equal(answer.status, 200);
      const keepAlive = String(answer.headers["keep-alive"]);
      // Node announces its idle timeout; Node's default (5 s) is what made kcp's reviews fail with EOF.
      const seconds = Number(/timeout=(\d+)/.exec(keepAlive)?.[1]);
      assert.ok(seconds > 90, `Keep-Alive: ${keepAlive}`);
    } finally {
      agent.destroy();
      await h.server.close();
    }
  });
});
