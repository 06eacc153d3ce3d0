// The health port caps its connections: idle sockets past the cap are closed at once, and once they go the probes
// and the scrape are answered again. No test measures time: each waits on a condition.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { Registry } from "prom-client";
import { HEALTH_LIMITS, startHealthServer } from "../../src/observability/health.ts";

function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      })
      .on("error", reject);
  });
}

describe("health port limits", () => {
  it("closes connections past the cap, and answers again once they are gone", async () => {
    const server = await startHealthServer("127.0.0.1:0", new Registry(), {}, { ...HEALTH_LIMITS, maxConnections: 2 });
    const idle: net.Socket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const s = net.connect(server.port, "127.0.0.1");
        await new Promise((resolve) => s.once("connect", resolve));
        idle.push(s);
      }
      await assert.rejects(get(server.port, "/healthz"), /socket hang up|ECONNRESET/);
      for (const s of idle) s.destroy();
      let code = 0;
      for (let i = 0; i < 500 && code !== 200; i++) {
        code = await get(server.port, "/healthz").catch(() => 0);
        if (code !== 200) await delay(10);
      }
      assert.equal(code, 200);
    } finally {
      for (const s of idle) s.destroy();
      await server.close();
    }
  });
});
