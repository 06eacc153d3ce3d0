// Pruning local-target configurations through the controller's real sync (local-targets-sync.ts) against the
// export's consumers played by bench/local-targets-kcp.ts: the configurations go once the export's last local-target
// rule goes (visited through the record, not through the rules), the record shrinks only then, a steady state
// writes nothing, and an export whose virtual workspace refuses (export or grant gone) leaves the record. Also the
// record's ConfigMap I/O (src/kcp/local-targets-record.ts) against a played dep-ctrl workspace.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { LOCAL_EXPORTS_KEY, LOCAL_EXPORTS_NAME } from "../../src/controller/local-targets-visits.ts";
import { LocalTargets } from "../../src/controller/local-targets-sync.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import { ExportRecordConfigMap, ExportRecordInMemory } from "../../src/kcp/local-targets-record.ts";
import { ApiError } from "../../src/kcp/rest.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { consumersOf, ruleObject } from "../../bench/local-targets.ts";

const DEP_CTRL_VW = "https://kcp.test/services/apiexport/root-depctrl/dependencies.opendefense.cloud";
const rules = (n: number): { parsed: ParsedRule }[] =>
  Array.from({ length: n }, (_, i) => ({ parsed: parseRule(ruleObject(i))! }));

function world(consumers = 10, declined = 2) {
  const kcp = consumersOf(consumers, declined);
  const record = new ExportRecordInMemory();
  let leader = true;
  const local = new LocalTargets({
    endpoints: () => [DEP_CTRL_VW],
    clientFor: (_endpoint, cluster) => kcp.client(cluster),
    webhookBaseUrl: "https://wh:9443",
    mayWrite: () => leader,
    localTargetsRecord: record,
    logger: silentLogger(),
    metrics: createMetrics(new Registry()),
  });
  const sync = (r: { parsed: ParsedRule }[]) => local.sync({ rules: r, caBundle: "Q0E=" }, () => false);
  return { kcp, record, sync, lead: (yes: boolean) => (leader = yes) };
}

describe("local targets: pruning through the controller's sync (consumers played without kcp)", () => {
  it("prunes every configuration once the export's last local-target rule is deleted, then forgets the export", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(2));
    assert.equal(kcp.count(), 8, "installed in the 8 consumers that accepted");
    assert.equal(record.exports.length, 1);
    await sync(rules(1));
    assert.equal(kcp.count(), 8, "one rule left: still protected");
    await sync([]);
    assert.equal(kcp.count(), 0, "no rule asks: pruned in every consumer");
    assert.deepEqual(record.exports, [], "nothing left: the export leaves the record");
    const writes = record.writes;
    await sync([]);
    assert.equal(record.writes, writes, "steady state: no write");
  });

  it("without the record nothing is visited once the rules are gone (what the record fixes)", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(1));
    record.exports = [];
    await sync([]);
    assert.equal(kcp.count(), 8);
  });

  it("writes nothing in a steady state: no configuration and no record write", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(2));
    const [stored, writes] = [JSON.stringify(kcp.view().existing), record.writes];
    await sync(rules(2));
    assert.equal(JSON.stringify(kcp.view().existing), stored);
    assert.equal(record.writes, writes);
  });

  it("keeps the export recorded while a prune cannot finish (not the leader), and prunes on the next pass", async () => {
    const { kcp, record, sync, lead } = world();
    await sync(rules(1));
    lead(false);
    await sync([]);
    assert.equal(kcp.count(), 8);
    assert.equal(record.exports.length, 1);
    lead(true);
    await sync([]);
    assert.equal(kcp.count(), 0);
    assert.deepEqual(record.exports, []);
  });

  it("still protects when the record cannot be read (RBAC not applied yet), and does not rewrite it then", async () => {
    const { kcp, record, sync } = world();
    const writes = record.writes;
    record.read = () => Promise.reject(new ApiError("GET", "/record", 403, "Forbidden", ""));
    await sync(rules(1));
    assert.equal(kcp.count(), 8, "installed all the same");
    assert.equal(record.writes, writes, "a record not read is not written");
  });

  it("forgets an export whose virtual workspace refuses (export or grant gone): its configurations stay", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(1));
    kcp.gone = true;
    await sync([]);
    assert.deepEqual(record.exports, []);
    assert.equal(kcp.count(), 8, "the controller can reach none of them; each consumer may delete its own");
  });

  it("forgets an export kcp deleted (its virtual workspace answers 500 API export not found), not one that fails", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(1));
    kcp.exportDeleted = true;
    await sync(rules(1));
    assert.equal(record.exports.length, 1, "the rule still names it: kept");
    await sync([]);
    assert.deepEqual(record.exports, [], "not visited (and warned about) on every pass forever");
    assert.equal(kcp.count(), 8);
  });

  it("keeps an export whose virtual workspace fails otherwise (a 500 that may pass), and prunes it later", async () => {
    const { kcp, record, sync } = world();
    await sync(rules(1));
    const client = kcp.client.bind(kcp);
    kcp.client = () => ({
      request: (method, path) => Promise.reject(new ApiError(method, path, 500, "Internal Server Error", "etcd")),
    });
    await sync([]);
    assert.equal(record.exports.length, 1);
    kcp.client = client;
    await sync([]);
    assert.deepEqual(record.exports, []);
    assert.equal(kcp.count(), 0);
  });

  it("leaves a consumer that declined after accepting with its configuration (the view no longer lists it)", async () => {
    const { kcp, sync } = world();
    await sync(rules(1));
    const [first] = [...kcp.consumers].find(([, ok]) => ok)!;
    kcp.consumers.set(first, false);
    await sync([]);
    assert.equal(kcp.count(), 1);
    assert.equal(kcp.count(first), 1);
  });
});

describe("local targets: the record as a ConfigMap in the dep-ctrl workspace", () => {
  function depCtrl() {
    const requests: string[] = [];
    let stored: { metadata: { resourceVersion: string }; data: Record<string, string> } | undefined;
    let rv = 0;
    const client = {
      request: <T>(method: string, path: string, opts?: { body?: unknown }): Promise<T> => {
        requests.push(`${method} ${path}`);
        if (method === "GET") {
          if (!stored) return Promise.reject(new ApiError(method, path, 404, "Not Found", ""));
          return Promise.resolve(structuredClone(stored) as T);
        }
        const body = opts?.body as { metadata: { resourceVersion?: string }; data: Record<string, string> };
        if (method === "PUT" && body.metadata.resourceVersion !== stored?.metadata.resourceVersion)
          return Promise.reject(new ApiError(method, path, 409, "Conflict", ""));
        stored = { metadata: { resourceVersion: String(++rv) }, data: body.data };
        return Promise.resolve(structuredClone(stored) as T);
      },
    };
    return { client, requests, stored: () => stored };
  }
  const e = { cluster: logicalClusterName("arc"), exportName: "arc.test.io" };

  it("creates it on the first export, updates it with its resourceVersion, and writes nothing when unchanged", async () => {
    const d = depCtrl();
    const record = new ExportRecordConfigMap(d.client);
    assert.deepEqual(await record.read(), []);
    await record.write([]);
    assert.deepEqual(
      d.requests,
      [`GET /api/v1/namespaces/default/configmaps/${LOCAL_EXPORTS_NAME}`],
      "no empty create",
    );
    await record.write([e]);
    assert.equal(d.requests.at(-1), "POST /api/v1/namespaces/default/configmaps");
    await record.write([e]);
    assert.equal(d.requests.length, 2, "unchanged: no write");
    const again = new ExportRecordConfigMap(d.client);
    assert.deepEqual(await again.read(), [e], "a new leader reads what the last one wrote");
    await again.write([]);
    assert.equal(d.requests.at(-1), `PUT /api/v1/namespaces/default/configmaps/${LOCAL_EXPORTS_NAME}`);
    assert.equal(d.stored()?.data[LOCAL_EXPORTS_KEY], "[]");
  });

  it("throws on a conflict (another leader wrote since the read), so the pass runs again", async () => {
    const d = depCtrl();
    const a = new ExportRecordConfigMap(d.client);
    const b = new ExportRecordConfigMap(d.client);
    await a.read();
    await a.write([e]);
    await b.read();
    await a.write([]);
    await assert.rejects(
      b.write([e, { ...e, exportName: "x.io" }]),
      (err: unknown) => (err as ApiError).status === 409,
    );
  });
});
