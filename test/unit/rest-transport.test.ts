// The REST client's two pools: watches hold their sockets for as long as they are open, so a deadline-bound request
// must never wait behind them, and its deadline must run while it waits for a socket. A local server holds every
// watch open and answers everything else at once.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { RestClient } from "../../src/kcp/rest.ts";
import { MAX_REQUEST_SOCKETS } from "../../src/kcp/transport.ts";

const WATCHES = 80;
const credentials = { headers: () => Promise.resolve({}) };

describe("RestClient transport", () => {
  let server: http.Server;
  let base: string;
  let watching = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url?.includes("watch=true")) {
        watching++;
        req.once("close", () => watching--);
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        return; // held open until the client goes
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** Opens WATCHES watches on `client` and waits (on the server's count, not a clock) until `held` are open. */
  async function openWatches(client: RestClient, stop: AbortController, held: number): Promise<void> {
    for (let i = 0; i < WATCHES; i++) void client.watch("/apis/x/v1/things", {}, () => {}, stop.signal).catch(() => {});
    while (watching < held) await new Promise((r) => setImmediate(r));
  }

  it(`answers a request while ${WATCHES} watches to the same address are open`, { timeout: 60_000 }, async () => {
    const client = new RestClient(base, credentials);
    const stop = new AbortController();
    await openWatches(client, stop, WATCHES); // every watch has its own socket
    assert.deepEqual(await client.get("/apis/x/v1/things/one", { timeoutMs: 2_000 }), { ok: true });
    stop.abort();
    client.close();
  });

  it(
    "rejects at its deadline a request that waits for a socket behind watches (one shared pool)",
    { timeout: 60_000 },
    async () => {
      const shared = new http.Agent({ keepAlive: true, maxSockets: MAX_REQUEST_SOCKETS });
      const client = new RestClient(base, credentials, { agents: { requests: shared, watches: shared } });
      const stop = new AbortController();
      await openWatches(client, stop, MAX_REQUEST_SOCKETS); // the rest wait for a socket
      await assert.rejects(client.get("/apis/x/v1/things/one", { timeoutMs: 2_000 }), /no answer within 2000 ms/);
      stop.abort();
      client.close();
    },
  );
});
