// RestClient against a local HTTP server. Byte caps: a list page over the cap is asked for again with a smaller
// limit (never kept whole), one item over the cap fails with BodyTooLargeError, and an endless answer is cut off.
// 429: asked again as Retry-After says (capped), within maxRetries, maxTotalMs and the caller's signal, on a clock
// and sleep the tests inject, so no test waits for a Retry-After in real time.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { BodyTooLargeError, isApiError, RestClient, type List, type RetryPolicy } from "../../src/kcp/rest.ts";
import { DEFAULT_RETRY_POLICY, retryAfterMs } from "../../src/kcp/retry.ts";

interface Item {
  metadata: { name: string };
  data: string;
}

/** Items of about `bytes` bytes each as JSON. */
function items(n: number, bytes: number): Item[] {
  return Array.from({ length: n }, (_, i) => ({ metadata: { name: `item-${i}` }, data: "x".repeat(bytes) }));
}

describe("RestClient byte caps", () => {
  let server: http.Server;
  let base: string;
  /** limit of every list request seen, in order. */
  const limits: number[] = [];
  let store: Item[] = [];
  let streamed = 0;
  let streamClosed: Promise<void> = Promise.resolve();

  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/endless") {
        // An answer that never ends, written as fast as the client reads it.
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        streamClosed = new Promise((resolve) => res.on("close", resolve));
        const pump = (): void => {
          while (!res.destroyed && streamed < 256 * 1024 * 1024) {
            streamed += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end();
        };
        pump();
        return;
      }
      if (url.pathname === "/declared") {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(64 * 1024 * 1024) });
        res.write("{");
        return; // never finishes: the client must not wait for it
      }
      const limit = Number(url.searchParams.get("limit"));
      limits.push(limit);
      const from = Number(url.searchParams.get("continue") || "0");
      const page = store.slice(from, from + limit);
      const next = from + limit < store.length ? String(from + limit) : undefined;
      const list: List<Item> = { metadata: { resourceVersion: "7", ...(next ? { continue: next } : {}) }, items: page };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(list));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("splits a page over the cap by asking again with half the limit, and keeps every item in order", async () => {
    limits.length = 0;
    store = items(40, 1000); // about 1,030 bytes each: 40 items are about 41 KiB
    const client = new RestClient(base, { headers: () => Promise.resolve({}) });
    const pages: number[] = [];
    const list = await client.listPages<Item>(
      "/items",
      (page) => {
        pages.push(page.items.length);
      },
      { limit: 40, maxPageBytes: 12 * 1024 },
    );
    assert.equal(list, undefined);
    // 40 and 20 are over 12 KiB; 10 items (~10 KiB) fit, and 10 stays the limit for the rest of the list.
    assert.deepEqual(limits, [40, 20, 10, 10, 10, 10]);
    assert.deepEqual(pages, [10, 10, 10, 10]);
    const all = await client.listAll<Item>("/items", { limit: 40, maxPageBytes: 12 * 1024 });
    assert.deepEqual(
      all.items.map((i) => i.metadata.name),
      store.map((i) => i.metadata.name),
    );
    assert.equal(all.metadata.resourceVersion, "7");
    client.close();
  });

  it("fails with BodyTooLargeError when a single item is over the cap", async () => {
    limits.length = 0;
    store = [...items(1, 100), ...items(1, 20_000)].map((item, i) => ({ ...item, metadata: { name: `i${i}` } }));
    const client = new RestClient(base, { headers: () => Promise.resolve({}) });
    const seen: string[] = [];
    await assert.rejects(
      client.listPages<Item>("/items", (page) => void seen.push(...page.items.map((i) => i.metadata.name)), {
        limit: 4,
        maxPageBytes: 8 * 1024,
      }),
      (err: unknown) =>
        err instanceof BodyTooLargeError && err.maxBytes === 8 * 1024 && /8192-byte limit/.test(err.message),
    );
    assert.deepEqual(limits, [4, 2, 1, 1]);
    assert.deepEqual(seen, ["i0"], "the page that fitted was delivered before the oversized item");
    client.close();
  });

  it("stops reading an endless answer at the cap and closes the connection", async () => {
    streamed = 0;
    const client = new RestClient(base, { headers: () => Promise.resolve({}) });
    await assert.rejects(client.get("/endless", { maxBodyBytes: 1024 * 1024 }), BodyTooLargeError);
    await streamClosed;
    // The server stops when the client hangs up; socket buffers hold a few MiB at most, far from 256 MiB.
    assert.ok(streamed < 64 * 1024 * 1024, `server wrote ${streamed} bytes`);
    client.close();
  });

  it("refuses a declared content-length over the cap without waiting for the body", async () => {
    const client = new RestClient(base, { headers: () => Promise.resolve({}) });
    await assert.rejects(
      client.get("/declared", { maxBodyBytes: 1024 * 1024 }),
      (err: unknown) => err instanceof BodyTooLargeError && /content-length 67108864/.test(err.message),
    );
    client.close();
  });
});

describe("RestClient retries 429", () => {
  let server: http.Server;
  let base: string;
  /** Every request seen: method and the list's continue token. */
  const seen: { method: string; cont: string }[] = [];
  /** The headers of a 429 to answer the n-th request (from 0) with, or undefined to answer it normally. */
  let throttle: (n: number) => Record<string, string> | undefined = () => undefined;
  const store = items(6, 10);

  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const cont = url.searchParams.get("continue") ?? "";
      const n = seen.push({ method: req.method ?? "", cont }) - 1;
      const busy = throttle(n);
      if (busy) {
        const status = {
          kind: "Status",
          code: 429,
          reason: "TooManyRequests",
          message: "too many requests, slow down",
        };
        res.writeHead(429, { "content-type": "application/json", ...busy });
        return void res.end(JSON.stringify(status));
      }
      if (url.pathname === "/fail") return void res.writeHead(500).end("{}");
      const limit = Number(url.searchParams.get("limit") || "100");
      const from = Number(cont || "0");
      const next = from + limit < store.length ? String(from + limit) : undefined;
      const page = store.slice(from, from + limit);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ metadata: { resourceVersion: "9", ...(next ? { continue: next } : {}) }, items: page }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** A clock that only the sleeps move, and the sleeps they asked for. */
  function fakeTime(start = 0): { slept: number[]; retry: Partial<RetryPolicy> } {
    let t = start;
    const slept: number[] = [];
    const sleep = (ms: number): Promise<void> => {
      slept.push(ms);
      t += ms;
      return Promise.resolve();
    };
    return { slept, retry: { sleep, now: () => t } };
  }

  const client = (retry: Partial<RetryPolicy>) =>
    new RestClient(base, { headers: () => Promise.resolve({}) }, { retry });

  it("asks for a list page again after a 429, waiting as Retry-After says, and delivers the whole list", async () => {
    seen.length = 0;
    throttle = (n) => (n === 1 ? { "retry-after": "2" } : n === 2 ? { "retry-after": "1" } : undefined);
    const time = fakeTime();
    const c = client(time.retry);
    const list = await c.listAll<Item>("/items", { limit: 3 });
    assert.deepEqual(
      list.items.map((i) => i.metadata.name),
      store.map((i) => i.metadata.name),
    );
    assert.deepEqual(time.slept, [2000, 1000]);
    assert.deepEqual(
      seen.map((s) => s.cont),
      ["", "3", "3", "3"],
      "the throttled page is asked for again with the same continue token",
    );
    c.close();
  });

  it("caps a long Retry-After, reads an HTTP date by the injected clock, and waits the default without one", async () => {
    seen.length = 0;
    const now = Date.parse("2025-01-01T00:00:00Z");
    const asked: Record<string, string>[] = [
      { "retry-after": "120" },
      { "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" },
      {},
    ];
    throttle = (n) => asked[n];
    const time = fakeTime(now);
    const c = client({ ...time.retry, maxDelayMs: 4000, defaultDelayMs: 700, maxTotalMs: 60_000 });
    assert.equal((await c.get<List<Item>>("/items")).items.length, 6);
    // 120 s capped at 4 s; the date 3 s after "now" is 3 s away, less the 4 s already waited: 0; then the default.
    assert.deepEqual(time.slept, [4000, 0, 700]);
    c.close();
  });

  it("retries a write the same way: kcp refuses a 429 before doing anything", async () => {
    seen.length = 0;
    throttle = (n) => (n === 0 ? { "retry-after": "1" } : undefined);
    const time = fakeTime();
    const c = client(time.retry);
    await c.request("POST", "/items", { body: { metadata: { name: "x" } } });
    assert.deepEqual(
      seen.map((s) => s.method),
      ["POST", "POST"],
    );
    c.close();
  });

  it("gives up after maxRetries with the 429 as an ApiError", async () => {
    seen.length = 0;
    throttle = () => ({ "retry-after": "1" });
    const time = fakeTime();
    const c = client({ ...time.retry, maxRetries: 3 });
    await assert.rejects(
      c.listAll<Item>("/items"),
      (err: unknown) => isApiError(err, 429) && /too many requests, slow down/.test(err.message),
    );
    assert.equal(seen.length, 4, "the first attempt and three retries");
    assert.deepEqual(time.slept, [1000, 1000, 1000]);
    c.close();
  });

  it("starts no retry whose wait would end past maxTotalMs", async () => {
    seen.length = 0;
    throttle = () => ({ "retry-after": "1" });
    const time = fakeTime();
    const c = client({ ...time.retry, maxRetries: 10, maxTotalMs: 2500 });
    await assert.rejects(c.get("/items"), (err: unknown) => isApiError(err, 429));
    assert.deepEqual(time.slept, [1000, 1000], "a third wait would end at 3 s");
    assert.equal(seen.length, 3);
    c.close();
  });

  it("stops waiting when the caller's signal aborts, with the 429, and sends nothing more", async () => {
    seen.length = 0;
    throttle = () => ({ "retry-after": "5" });
    // The real sleep, and the caller aborts while it waits out the 5 s Retry-After: it must give up at once. If it
    // ignored the signal, the retry would be sent (seen.length 2) or the test would hit its timeout.
    const caller = new AbortController();
    const c = client({
      sleep: (ms, signal) => {
        const waiting = DEFAULT_RETRY_POLICY.sleep(ms, signal);
        caller.abort();
        return waiting;
      },
    });
    await assert.rejects(c.listAll<Item>("/items", { signal: caller.signal }), (err: unknown) => isApiError(err, 429));
    assert.equal(seen.length, 1);
    c.close();
  });

  it("does not retry other errors, and maxRetries 0 turns retrying off", async () => {
    seen.length = 0;
    throttle = () => undefined;
    const time = fakeTime();
    const c = client(time.retry);
    await assert.rejects(c.get("/fail"), (err: unknown) => isApiError(err, 500));
    assert.equal(seen.length, 1);
    seen.length = 0;
    throttle = () => ({ "retry-after": "1" });
    const off = client({ ...time.retry, maxRetries: 0 });
    await assert.rejects(off.get("/items"), (err: unknown) => isApiError(err, 429));
    assert.equal(seen.length, 1);
    assert.deepEqual(time.slept, []);
    c.close();
    off.close();
  });
});

describe("retryAfterMs", () => {
  it("reads delta-seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    assert.equal(retryAfterMs("7", now), 7000);
    assert.equal(retryAfterMs(" 0 ", now), 0);
    assert.equal(retryAfterMs(["2", "9"], now), 2000);
    assert.equal(retryAfterMs("Wed, 01 Jan 2025 00:00:10 GMT", now), 10_000);
    assert.equal(retryAfterMs("Tue, 31 Dec 2024 23:00:00 GMT", now), 0, "a date in the past: at once");
    assert.equal(retryAfterMs("-1", now), undefined);
    assert.equal(retryAfterMs("soon", now), undefined);
    assert.equal(retryAfterMs(undefined, now), undefined);
    assert.equal(retryAfterMs("", now), undefined);
  });
});

describe("ApiError keeps the Status", () => {
  let server: http.Server;
  let base: string;
  const refusal = {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code: 409,
    reason: "Conflict",
    message: 'admission webhook "w" denied the request: cannot delete vpcs/v: still referenced by VirtualMachine/vm-1',
    details: { causes: [{ reason: "ReferencedBy", message: "VirtualMachine/vm-1", field: ".spec.vpcRef.name" }] },
  };

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/clusters/ws/vpcs/v?dryRun=All" && req.method === "DELETE") {
        res.writeHead(409, { "content-type": "application/json" });
        res.end(JSON.stringify(refusal));
        return;
      }
      res.writeHead(502, { "content-type": "text/html" });
      res.end("  <html>bad gateway</html>\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("with details.causes, next to the status, reason and message", async () => {
    const c = new RestClient(base, { headers: async () => ({}) }).forCluster("ws");
    await assert.rejects(c.request("DELETE", "/vpcs/v", { query: { dryRun: "All" } }), (err: unknown) => {
      assert.ok(isApiError(err, 409));
      assert.equal(err.reason, "Conflict");
      assert.equal(err.statusMessage, refusal.message);
      assert.deepEqual(err.apiStatus, refusal);
      return true;
    });
    c.close();
  });

  it("and the body's text when the answer is no Status", async () => {
    const c = new RestClient(base, { headers: async () => ({}) });
    await assert.rejects(c.get("/other"), (err: unknown) => {
      assert.ok(isApiError(err, 502));
      assert.equal(err.reason, "Bad Gateway");
      assert.equal(err.statusMessage, "<html>bad gateway</html>");
      assert.equal(err.apiStatus, undefined);
      return true;
    });
    c.close();
  });
});
