import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { RestClient } from "../../src/kcp/rest.ts";

import type { LogicalClusterName } from "../../src/api/types.ts";
import { dependentListPath, LiveDependentFinder } from "../../src/webhook/deletion/live.ts";
import { vmLookup } from "./helpers-rules.ts";

const lookup = vmLookup;

describe("dependentListPath", () => {
  it("lists across namespaces for a cluster-scoped target", () => {
    assert.equal(dependentListPath(lookup()), "/clusters/consumer1/apis/compute.example.io/v1/virtualmachines");
  });
  it("lists in one namespace for a namespaced target", () => {
    assert.equal(
      dependentListPath(lookup({ namespace: "team-a" })),
      "/clusters/consumer1/apis/compute.example.io/v1/namespaces/team-a/virtualmachines",
    );
  });
  it("uses /api for the core group", () => {
    const core = {
      group: "",
      version: "v1",
      resource: "configmaps",
      kind: "ConfigMap",
      apiExportName: "",
      exportCluster: "compute" as LogicalClusterName,
    };
    assert.equal(dependentListPath(lookup({ dependent: core })), "/clusters/consumer1/api/v1/configmaps");
  });
});

describe("LiveDependentFinder", () => {
  let server: http.Server;
  let base: RestClient;
  const requests: string[] = [];
  /** 25 VMs, every odd one referencing my-vpc; served 5 per page. */
  const vms = Array.from({ length: 25 }, (_, i) => ({
    metadata: { name: `vm-${String(i).padStart(2, "0")}`, namespace: "default" },
    spec: { vpcRef: { name: i % 2 === 1 ? "my-vpc" : "other" } },
  }));
  const sockets = new Set<string>();

  before(async () => {
    server = http.createServer((req, res) => {
      requests.push(req.url ?? "");
      sockets.add(`${req.socket.remotePort}`);
      const url = new URL(req.url ?? "/", "http://x");
      const send = (code: number, body: unknown) =>
        res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (url.pathname.includes("/notbound/")) {
        return send(404, {
          kind: "Status",
          code: 404,
          reason: "NotFound",
          message: "the server could not find the requested resource",
        });
      }
      if (url.pathname.endsWith("/clusterthings")) {
        if (url.pathname.includes("/namespaces/")) return send(404, { kind: "Status", code: 404, reason: "NotFound" });
        return send(200, { metadata: {}, items: [{ metadata: { name: "t1" }, spec: { vpcRef: { name: "my-vpc" } } }] });
      }
      if (url.pathname.includes("/forbidden/")) {
        return send(403, { kind: "Status", code: 403, reason: "Forbidden", message: "access denied" });
      }
      const limit = Number(url.searchParams.get("limit"));
      const start = Number(url.searchParams.get("continue") ?? "0");
      const items = vms.slice(start, start + limit);
      const next = start + limit < vms.length ? String(start + limit) : undefined;
      send(200, { kind: "List", metadata: next ? { continue: next } : {}, items });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = new RestClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
      headers: () => Promise.resolve({}),
    });
  });

  after(async () => {
    base.close();
    await new Promise((r) => server.close(r));
  });

  it("pages through everything when the cap is not reached", async () => {
    requests.length = 0;
    const finder = new LiveDependentFinder({ base, pageSize: 5 });
    const found = await finder.find(lookup(), 20);
    assert.equal(found.complete, true);
    assert.equal(found.dependents.length, 12);
    assert.deepEqual(found.dependents[0], { namespace: "default", name: "vm-01", field: ".spec.vpcRef.name" });
    assert.equal(requests.length, 5);
    assert.equal(requests[0], "/clusters/consumer1/apis/compute.example.io/v1/virtualmachines?limit=5");
    assert.equal(requests[1], "/clusters/consumer1/apis/compute.example.io/v1/virtualmachines?limit=5&continue=5");
  });

  it("stops paging as soon as more than the cap are found", async () => {
    requests.length = 0;
    const finder = new LiveDependentFinder({ base, pageSize: 5 });
    const found = await finder.find(lookup(), 4);
    // pages of 5 hold 2 or 3 matches: after page 2 there are 5 > 4
    assert.equal(requests.length, 2);
    assert.equal(found.complete, false);
    assert.equal(found.dependents.length, 5);
  });

  it("is complete when the cap is exceeded on the last page", async () => {
    const finder = new LiveDependentFinder({ base, pageSize: 100 });
    const found = await finder.find(lookup(), 4);
    assert.equal(found.complete, true);
    assert.equal(found.dependents.length, 12);
  });

  it("treats 404 as no dependents (type not bound in the consumer)", async () => {
    const finder = new LiveDependentFinder({ base });
    const found = await finder.find(lookup({ consumer: "notbound" as LogicalClusterName }), 10);
    assert.deepEqual(found, { ok: true, dependents: [], complete: true, notBound: true });
  });

  it("reports a namespaced list that 404s as notBound, and decides nothing else (the retry is decision.ts's)", async () => {
    requests.length = 0;
    const finder = new LiveDependentFinder({ base });
    const things = {
      group: "x.io",
      version: "v1",
      resource: "clusterthings",
      kind: "Thing",
      apiExportName: "x.io",
      exportCluster: "compute" as LogicalClusterName,
    };
    const found = await finder.find(lookup({ dependent: things, namespace: "default" }), 10);
    assert.deepEqual(found, { ok: true, dependents: [], complete: true, notBound: true });
    assert.deepEqual(requests, ["/clusters/consumer1/apis/x.io/v1/namespaces/default/clusterthings?limit=1000"]);
    const clusterWide = await finder.find(lookup({ dependent: things }), 10);
    assert.deepEqual(clusterWide.dependents, [{ name: "t1", field: ".spec.vpcRef.name" }]);
  });

  it("throws any other error with its reason", async () => {
    const finder = new LiveDependentFinder({ base });
    await assert.rejects(
      finder.find(lookup({ consumer: "forbidden" as LogicalClusterName }), 10),
      /403 Forbidden: access denied/,
    );
  });

  it("reuses keep-alive connections across lookups", async () => {
    sockets.clear();
    const finder = new LiveDependentFinder({ base, pageSize: 100 });
    for (let i = 0; i < 5; i++) await finder.find(lookup(), 100);
    assert.equal(sockets.size, 1);
  });
});
