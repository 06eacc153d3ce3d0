// The index's health as the controller reads it: IndexReporter writes the report ConfigMap on its work loop, only
// when it changed, on the fake clock (no test sleeps), against a ConfigMap store standing in for kcp.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { INDEX_REPORT_PATH, parseIndexReport } from "../../src/api/index-report.ts";
import { toApiError } from "../../src/kcp/answers.ts";
import { IndexReporter, mergeReports, REPLICA_TTL_MS, reportOf } from "../../src/webhook/deletion/index/report.ts";
import type { TypeHealth } from "../../src/webhook/deletion/index/watches.ts";
import { FakeClock } from "../support/fake-clock.ts";

/** One ConfigMap path of kcp: GET (404 when absent), POST to the collection, PUT with the current resourceVersion. */
function kcpConfigMap() {
  let stored: Record<string, unknown> | undefined;
  let rv = 0;
  const calls: string[] = [];
  let failNext: number | undefined;
  const client = {
    request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T> {
      calls.push(`${method} ${path}`);
      if (failNext !== undefined) {
        const status = failNext;
        failNext = undefined;
        return Promise.reject(toApiError(method, path, status, "{}"));
      }
      const body = opts?.body as { metadata?: { resourceVersion?: string } } | undefined;
      if (method === "GET") {
        if (!stored) return Promise.reject(toApiError(method, path, 404, "{}"));
        return Promise.resolve(structuredClone(stored) as T);
      }
      if (method === "PUT" && body?.metadata?.resourceVersion !== String(rv))
        return Promise.reject(toApiError(method, path, 409, "{}"));
      rv++;
      stored = { ...(body as object), metadata: { ...body?.metadata, resourceVersion: String(rv) } };
      return Promise.resolve(structuredClone(stored) as T);
    },
  };
  return {
    client,
    calls,
    report: () => parseIndexReport(stored),
    failNextWith: (status: number) => (failNext = status),
  };
}

function reporter(health: () => TypeHealth[]) {
  const kcp = kcpConfigMap();
  const clock = new FakeClock();
  const r = new IndexReporter({ client: kcp.client, health, logger: pino({ level: "silent" }), clock });
  return { kcp, clock, r };
}

const VM = "compute/compute.example.io/compute.example.io/v1/virtualmachines";
const DISK = "compute/compute.example.io/compute.example.io/v1/disks";

describe("reportOf", () => {
  it("passes ready and syncing through, and tells a missing consent (403) from other failures", () => {
    assert.deepEqual(
      reportOf([
        { type: VM, state: "ready", errors: [] },
        { type: DISK, state: "syncing", errors: [] },
        { type: "a", state: "failing", errors: ["GET x: 403 Forbidden: no"] },
        { type: "b", state: "failing", errors: ["connect ECONNREFUSED", "GET y: 500 InternalError"] },
      ]),
      {
        [VM]: { state: "ready" },
        [DISK]: { state: "syncing" },
        a: { state: "failing", reason: "Forbidden" },
        b: { state: "failing", reason: "Error" },
      },
    );
  });
});

describe("IndexReporter", () => {
  it("waits out its debounce, then creates the report when there is none", async () => {
    const { kcp, clock, r } = reporter(() => [{ type: VM, state: "ready", errors: [] }]);
    r.start();
    await clock.advance(1_999);
    assert.deepEqual(kcp.calls, []);
    await clock.advance(1);
    assert.deepEqual(kcp.calls, [`GET ${INDEX_REPORT_PATH}`, `POST /api/v1/namespaces/default/configmaps`]);
    assert.deepEqual(kcp.report(), { [VM]: { state: "ready" } });
    await r.stop();
  });

  it("writes nothing while the report is unchanged, and replaces it (with its resourceVersion) when it changed", async () => {
    let health: TypeHealth[] = [{ type: VM, state: "syncing", errors: [] }];
    const { kcp, clock, r } = reporter(() => health);
    r.start();
    await clock.advance(2_000);
    kcp.calls.length = 0;
    r.changed();
    await clock.advance(2_000);
    assert.deepEqual(kcp.calls, [`GET ${INDEX_REPORT_PATH}`]);
    health = [{ type: VM, state: "failing", errors: ["403 Forbidden"] }];
    r.changed();
    r.changed(); // a burst is one pass
    await clock.advance(2_000);
    assert.deepEqual(kcp.calls, [`GET ${INDEX_REPORT_PATH}`, `GET ${INDEX_REPORT_PATH}`, `PUT ${INDEX_REPORT_PATH}`]);
    assert.deepEqual(kcp.report(), { [VM]: { state: "failing", reason: "Forbidden" } });
    await r.stop();
  });

  it("looks again every minute without being told, and retries a failed write", async () => {
    let health: TypeHealth[] = [];
    const { kcp, clock, r } = reporter(() => health);
    r.start();
    kcp.failNextWith(500);
    await clock.advance(2_000);
    assert.equal(kcp.report(), undefined);
    await clock.advance(500); // the loop's first backoff
    assert.deepEqual(kcp.report(), {});
    health = [{ type: DISK, state: "ready", errors: [] }];
    await clock.advance(60_000);
    assert.deepEqual(kcp.report(), { [DISK]: { state: "ready" } });
    const stored = kcp.calls.length;
    await r.stop();
    r.changed();
    await clock.advance(120_000);
    assert.equal(kcp.calls.length, stored, "nothing after stop");
  });
});

describe("IndexReporter: several replicas", () => {
  it("publishes the worst state any live replica reports, whoever writes last, and forgets a replica that is gone", async () => {
    const kcp = kcpConfigMap();
    const clock = new FakeClock();
    const logger = pino({ level: "silent" });
    let aHealth: TypeHealth[] = [{ type: VM, state: "failing", errors: ["403 Forbidden"] }];
    const a = new IndexReporter({ client: kcp.client, health: () => aHealth, logger, clock, replica: "a" });
    const b = new IndexReporter({
      client: kcp.client,
      health: () => [{ type: VM, state: "ready", errors: [] }],
      logger,
      clock,
      replica: "b",
    });
    a.start();
    await clock.advance(2_000);
    b.start();
    await clock.advance(2_000);
    // b wrote last and sees the type ready; a's 403 still shows.
    assert.deepEqual(kcp.report(), { [VM]: { state: "failing", reason: "Forbidden" } });
    for (let i = 0; i < 3; i++) {
      b.changed();
      await clock.advance(2_000);
      assert.deepEqual(kcp.report(), { [VM]: { state: "failing", reason: "Forbidden" } }, "no flapping");
      a.changed();
      await clock.advance(2_000);
      assert.deepEqual(kcp.report(), { [VM]: { state: "failing", reason: "Forbidden" } }, "no flapping");
    }
    aHealth = [{ type: VM, state: "ready", errors: [] }];
    a.changed();
    await clock.advance(2_000);
    assert.deepEqual(kcp.report(), { [VM]: { state: "ready" } });
    // a goes away while failing: b's heartbeats drop it once its entry is older than the TTL.
    aHealth = [{ type: VM, state: "syncing", errors: [] }];
    a.changed();
    await clock.advance(2_000);
    assert.deepEqual(kcp.report(), { [VM]: { state: "syncing" } });
    await a.stop();
    await clock.advance(REPLICA_TTL_MS + 60_000);
    assert.deepEqual(kcp.report(), { [VM]: { state: "ready" } });
    await b.stop();
  });

  it("merges per type: Forbidden over Error over syncing over ready", () => {
    assert.deepEqual(
      mergeReports([
        { x: { state: "ready" }, y: { state: "failing", reason: "Error" }, z: { state: "syncing" } },
        { x: { state: "syncing" }, y: { state: "failing", reason: "Forbidden" } },
        { y: { state: "ready" }, z: { state: "ready" } },
      ]),
      { x: { state: "syncing" }, y: { state: "failing", reason: "Forbidden" }, z: { state: "syncing" } },
    );
  });
});
