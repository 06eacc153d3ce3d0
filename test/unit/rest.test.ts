// RestClient's byte caps against a local HTTP server: a list page over the cap is asked for again with a smaller
// limit (never kept whole), one item over the cap fails with BodyTooLargeError, and an endless answer is cut off.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { BodyTooLargeError, RestClient, type List } from "../../src/kcp/rest.ts";

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
