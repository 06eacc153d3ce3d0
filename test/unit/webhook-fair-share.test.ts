// The review transport's shared resources under the two attacks of issue 30, on the real server over loopback TLS
// with a fake clock (time moves only when the test says): uploads that stall just short of 2 MiB fill the 16 MiB
// of bodies held at once, and 256 TLS connections that never send a request fill the connection cap. Each time,
// genuine reviews (small, sent at once, as kcp sends them) are answered 200, also while the attacker keeps refilling.
// No test measures time: each waits on a condition.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { setTimeout as delay } from "node:timers/promises";
import tls from "node:tls";
import { Registry } from "prom-client";
import { silentLogger } from "../../src/observability/logger.ts";
import { MAX_BODY_BYTES, MAX_BUFFERED_BODY_BYTES } from "../../src/webhook/http/limits.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/http/server.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { deleteReview, servingCertSuite } from "../support/serving-cert.ts";

const cert = servingCertSuite("webhook-fair-share-");
const review = deleteReview;

async function waitUntil(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 3_000; i++) {
    if (await cond()) return;
    await delay(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

interface Harness {
  server: WebhookServer;
  clock: FakeClock;
  registry: Registry;
  refusals: string[];
}

async function start(): Promise<Harness> {
  const clock = new FakeClock();
  const registry = new Registry();
  const refusals: string[] = [];
  const server = await startWebhookServer({
    host: "127.0.0.1",
    port: 0,
    tls: cert.files,
    handler: () => Promise.resolve({ allowed: true, reason: "no-dependents" }),
    logger: silentLogger(),
    metrics: createWebhookMetrics(registry),
    clock,
    onRefusal: (reason) => refusals.push(reason),
  });
  return { server, clock, registry, refusals };
}

/** A genuine review: the whole body at once on a new connection; its status and the decision's uid. */
function genuine(port: number, uid: string, agent: https.Agent | false = false): Promise<[number, unknown]> {
  const body = review(uid);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/validate/net1",
        method: "POST",
        ca: [cert.ca],
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const answer = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { response?: { uid?: string } };
          resolve([res.statusCode ?? 0, answer.response?.uid]);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** An upload declaring 2 MiB that sends `bytes` of it and stalls; `status` is its answer's, or 0 on a reset. */
function stalledUpload(port: number, bytes: number) {
  const upload: { req: ReturnType<typeof https.request>; status?: number } = {
    req: https.request({
      host: "127.0.0.1",
      port,
      path: "/validate/net1",
      method: "POST",
      ca: [cert.ca],
      agent: false,
      headers: { "content-type": "application/json", "content-length": MAX_BODY_BYTES },
    }),
  };
  upload.req.on("response", (res) => (upload.status ??= res.statusCode ?? 0)).on("error", () => (upload.status ??= 0));
  upload.req.write(Buffer.alloc(bytes, 0x20));
  return upload;
}

async function gauge(registry: Registry, name: string): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return metric?.values[0]?.value ?? 0;
}

const count = (list: string[], what: string) => list.filter((r) => r === what).length;

describe("review transport: a connection holds no more than its share of the body budget", () => {
  it("8 uploads stalled just short of 2 MiB, refilled as they are cut off: genuine reviews are answered 200", async () => {
    const h = await start();
    const near = MAX_BODY_BYTES - 16;
    const held = () => gauge(h.registry, "dependency_webhook_body_bytes_held");
    const stalled = Array.from({ length: 8 }, () => stalledUpload(h.server.port, near));
    try {
      for (let round = 1; round <= 5; round++) {
        // The budget full: 8 uploads hold 16 MiB but 128 bytes, too little room for a genuine review beside them.
        await waitUntil(async () => (await held()) === 8 * near, `round ${round}: 8 uploads in`);
        assert.ok(MAX_BUFFERED_BODY_BYTES - 8 * near < Buffer.byteLength(review("g")));
        assert.deepEqual(await genuine(h.server.port, `g-${round}`), [200, `g-${round}`]);
        // The genuine review took its room from one stalled upload: 429 (or a reset), its connection closed.
        await waitUntil(() => stalled.some((s) => s.status !== undefined), `round ${round}: an upload cut off`);
        const cut = stalled.findIndex((s) => s.status !== undefined);
        assert.ok([429, 0].includes(stalled[cut]!.status!), `the cut-off upload got ${stalled[cut]!.status}`);
        assert.equal(stalled.filter((s) => s.status !== undefined).length, 1, "one upload made room");
        stalled[cut] = stalledUpload(h.server.port, near); // the attacker opens another one at once
      }
      assert.deepEqual(h.refusals, Array(5).fill("body-preempted"), "no genuine review refused");
    } finally {
      for (const s of stalled) s.req.destroy();
      await h.server.close();
    }
  });
});
/** `n` TLS connections that never send a request; resolves once all are up. */
async function idleConnections(port: number, n: number): Promise<tls.TLSSocket[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<tls.TLSSocket>((resolve, reject) => {
          const socket = tls.connect({ host: "127.0.0.1", port, ca: [cert.ca] }, () => resolve(socket));
          socket.on("error", reject);
        }),
    ),
  ).then((sockets) => sockets.map((s) => s.removeAllListeners("error").on("error", () => undefined)));
}

const closed = (sockets: tls.TLSSocket[]) => sockets.filter((s) => s.closed || s.destroyed).length;

describe("review transport: connections that never send a request give way", () => {
  it("256 idle TLS connections, refilled as they are closed: genuine reviews are answered 200", async () => {
    const h = await start(); // the cap: 256 connections
    const open = () => gauge(h.registry, "dependency_webhook_connections_open");
    let idle = await idleConnections(h.server.port, 256);
    try {
      for (let round = 1; round <= 5; round++) {
        await waitUntil(async () => (await open()) === 256, `round ${round}: the cap full`);
        assert.deepEqual(await genuine(h.server.port, `c-${round}`), [200, `c-${round}`]);
        // The genuine connection closed the oldest idle one to take its place, and no other.
        await waitUntil(() => closed(idle) === 1, `round ${round}: an idle connection closed`);
        assert.equal(
          idle.findIndex((s) => s.closed || s.destroyed),
          0,
          "the oldest",
        );
        assert.equal(count(h.refusals, "connection-idle"), round);
        await waitUntil(async () => (await open()) === 255, `round ${round}: the genuine connection gone`);
        idle = [...idle.slice(1), ...(await idleConnections(h.server.port, 1))]; // the attacker opens another
      }
      // kcp's way: one keep-alive connection, its first request sent at once, then reused.
      await waitUntil(async () => (await open()) === 256, "the cap full");
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; i < 3; i++) assert.deepEqual(await genuine(h.server.port, `k-${i}`, agent), [200, `k-${i}`]);
      agent.destroy();
      assert.deepEqual(h.refusals, Array(6).fill("connection-idle"), "no genuine review refused");
      await waitUntil(async () => (await open()) === 255, "kcp's connection gone, 255 idle ones open");
      // While three quarters of the cap are open, a connection still silent after 3 s is closed; the rest after 10 s.
      await h.clock.advance(3_000);
      await waitUntil(async () => (await open()) === 191, "idle connections closed down to 3/4 of the cap");
      assert.equal(closed(idle), 1 + 255 - 191, "the one kcp's connection replaced, and 64 more");
      await h.clock.advance(7_000);
      await waitUntil(() => closed(idle) === idle.length, "every idle connection closed");
      await waitUntil(async () => (await open()) === 0, "no connection open");
    } finally {
      for (const s of idle) s.destroy();
      await h.server.close();
    }
  });

  it("far below the cap, a silent connection is kept for a while, and closed after 10 s all the same", async () => {
    const h = await start();
    const idle = await idleConnections(h.server.port, 3);
    try {
      await h.clock.advance(9_999);
      assert.deepEqual(await genuine(h.server.port, "between"), [200, "between"]);
      assert.equal(closed(idle), 0);
      await h.clock.advance(1);
      await waitUntil(() => closed(idle) === 3, "the silent connections closed");
      assert.deepEqual(h.refusals, ["connection-idle", "connection-idle", "connection-idle"]);
    } finally {
      for (const s of idle) s.destroy();
      await h.server.close();
    }
  });
});
