// The dependents index's real watch (exportWatchFactory: ExportWatch, the informers, RestClient over TLS) against local
// servers: a provider tenant's endpoint slice lists forged URLs beside the genuine one. No forged URL is ever
// connected to (other servers count their connections, the "kcp" server every request), each is refused, counted
// by reason and logged with its URL, and the type's health is failing with errors naming them, while the genuine
// endpoint is listed and answers. The origins come from the dep-ctrl export's endpoints (learnt while running) or
// from the operator's flag.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { pino } from "pino";
import type { LogicalClusterName, WorkspacePath } from "../../src/api/types.ts";
import { VirtualWorkspaceOrigins, type EndpointRefusal } from "../../src/kcp/endpoint-origins.ts";
import { RestClient } from "../../src/kcp/rest.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { exportWatchFactory } from "../../src/webhook/deletion/index/watches.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { vmLookup } from "./helpers-rules.ts";
import { registryOf, vmObject, vmType } from "./index-fake-watch.ts";

const SLICES = "/clusters/compute/apis/apis.kcp.io/v1alpha1/apiexportendpointslices";
const VW = "/services/apiexport/compute/compute.example.io";
const VMS = `${VW}/clusters/*/apis/compute.example.io/v1/virtualmachines`;
const VM_READ = `${VW}/clusters/consumer1/apis/compute.example.io/v1/namespaces/default/virtualmachines/vm1`;

let dir: string;
let kcp: https.Server; // serves the provider's slices and its genuine virtual workspace
let other: https.Server; // another port: a tenant's own server
let plain: http.Server; // a plain-http server
let kcpOrigin = "";
let otherPort = 0;
let plainPort = 0;
/** Every request the "kcp" server saw: its Host header and path (the query apart). */
const seen = { kcp: [] as { host: string; path: string }[], otherConnections: 0, plainConnections: 0 };
let slices: unknown[] = [];
const held: http.ServerResponse[] = [];

function kcpHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? "/", "https://x");
  seen.kcp.push({ host: req.headers.host ?? "", path: url.pathname });
  const json = (body: unknown): void => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (url.searchParams.get("watch") === "true") {
    res.writeHead(200, { "content-type": "application/json" }); // stays open, quiet
    held.push(res);
    return;
  }
  if (url.pathname === SLICES) return json({ metadata: { resourceVersion: "1" }, items: slices });
  if (url.pathname === VMS) return json({ metadata: { resourceVersion: "1" }, items: [vm()] });
  if (url.pathname === VM_READ) return json(vm());
  res.writeHead(404).end("{}");
}

const vm = () => ({ ...(vmObject("consumer1", "vm1", "my-vpc") as object), metadata: vmMeta() });
const vmMeta = () => ({
  name: "vm1",
  namespace: "default",
  uid: "u1",
  resourceVersion: "1",
  annotations: { "kcp.io/cluster": "consumer1" },
});

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "allowlist-watch-"));
  const certs = makeCerts(dir);
  const tls = { cert: readFileSync(certs.cert), key: readFileSync(certs.key) };
  kcp = https.createServer(tls, kcpHandler);
  other = https.createServer(tls, (_req, res) => res.writeHead(404).end("{}"));
  other.on("connection", () => seen.otherConnections++);
  plain = http.createServer((_req, res) => res.writeHead(404).end("{}"));
  plain.on("connection", () => seen.plainConnections++);
  for (const s of [kcp, other, plain]) await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  kcpOrigin = `https://127.0.0.1:${(kcp.address() as AddressInfo).port}`;
  otherPort = (other.address() as AddressInfo).port;
  plainPort = (plain.address() as AddressInfo).port;
});

after(async () => {
  for (const res of held) res.destroy();
  for (const s of [kcp, other, plain]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The index with the production factory, the webhook's credentials, and a log the test reads. */
function indexWith(origins: VirtualWorkspaceOrigins) {
  const client = new RestClient(kcpOrigin, {
    ca: readFileSync(path.join(dir, "ca.crt")),
    headers: () => Promise.resolve({ authorization: "Bearer webhook-secret" }),
  });
  const logs: { msg: string; url?: string; reason?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) logs.push(JSON.parse(line) as never);
      done();
    },
  });
  const refused: EndpointRefusal[] = [];
  // The provider's own workspace path resolves to its cluster; another provider's to another.
  const clusters: Record<string, string> = { "root:compute-provider": "compute", "root:network-provider": "network" };
  const resolve = (p: WorkspacePath): Promise<Resolution> =>
    Promise.resolve({ ok: true, cluster: (clusters[p] ?? "nowhere") as LogicalClusterName });
  const logger = pino({ level: "info" }, sink);
  const index = new DependentsIndex({
    watch: exportWatchFactory(client, logger, { endpoints: { origins, resolve, onRefused: (r) => refused.push(r) } }),
    logger,
  });
  index.follow(registryOf(vmType(".spec.vpcRef.name")));
  const stop = () => {
    index.stop();
    client.close();
  };
  return { index, logs, refused, stop };
}

const slice = (name: string, path: string, urls: string[]) => ({
  metadata: { name },
  spec: { export: { name: "compute.example.io", path } },
  status: { endpoints: urls.map((url) => ({ url })) },
});

describe("the index follows only allowed virtual workspace URLs", () => {
  it("learns the shard origin from the dep-ctrl export's endpoints while running, then follows the genuine URL", async () => {
    seen.kcp.length = 0;
    slices = [slice("compute.example.io", "root:compute-provider", [`${kcpOrigin}${VW}`])];
    const origins = new VirtualWorkspaceOrigins(); // no flag; the dep-ctrl export has no endpoint yet
    const { index, refused, stop } = indexWith(origins);
    try {
      const failing = await waitFor("the genuine URL refused: no known origin", async () => {
        const h = index.health()[0];
        return h?.state === "failing" ? h : undefined;
      });
      assert.deepEqual(failing.errors, [
        `virtual workspace URL "${kcpOrigin}${VW}" of APIExportEndpointSlice compute.example.io refused: its origin is ` +
          "no known shard's virtual workspace (the dep-ctrl export's endpoints, --virtual-workspace-origins)",
      ]);
      assert.deepEqual(refused, ["unknown-origin"]);
      assert.ok(!seen.kcp.some((r) => r.path.startsWith(VW)), "not followed before its origin is known");

      origins.learn([`${kcpOrigin}/services/apiexport/depctrl/dependencies.opendefense.cloud`]);
      await waitFor("the type ready through the genuine endpoint", async () => index.health()[0]?.state === "ready");
      assert.ok(seen.kcp.some((r) => r.path === VMS));
      assert.deepEqual(refused, ["unknown-origin"], "counted once");
    } finally {
      stop();
    }
  });

  it("never connects to a forged URL; refuses, counts and logs each; fails the type; still answers from the genuine", async () => {
    seen.kcp.length = 0;
    const forged: [string, EndpointRefusal][] = [
      [`https://127.0.0.1:${otherPort}${VW}`, "unknown-origin"],
      [`https://localhost:${new URL(kcpOrigin).port}${VW}`, "unknown-origin"],
      [`http://127.0.0.1:${plainPort}${VW}`, "not-https"],
      [`${kcpOrigin}${VW}?labelSelector=x`, "query"],
      [`${kcpOrigin}${VW}#x`, "fragment"],
      [`https://u:p@${kcpOrigin.slice(8)}${VW}`, "userinfo"],
      [`${kcpOrigin}/services/apiexport/network/compute.example.io`, "wrong-path"],
      [`${kcpOrigin}/services/apiexport/compute/network.example.io`, "wrong-path"],
      [`${kcpOrigin}/services/apiexport/x/..%2F../compute/compute.example.io`, "wrong-path"],
      [`${kcpOrigin}${VW}/`, "wrong-path"],
    ];
    slices = [
      slice("compute.example.io", "root:compute-provider", [`${kcpOrigin}${VW}`, ...forged.map(([u]) => u)]),
      // Another provider's export of the same name: not this export's, ignored (neither followed nor refused).
      slice("theirs", "root:network-provider", [`${kcpOrigin}/services/apiexport/network/compute.example.io`]),
    ];
    const { index, logs, refused, stop } = indexWith(new VirtualWorkspaceOrigins([kcpOrigin])); // the flag
    try {
      const health = await waitFor("the type failing once the genuine endpoint listed", async () => {
        const h = index.health()[0];
        return h?.state === "failing" && seen.kcp.some((r) => r.path === VMS) ? h : undefined;
      });
      assert.equal(health.errors.length, 9, "8 refusals named, the rest counted in one line");
      for (const [url] of forged.slice(0, 8))
        assert.ok(
          health.errors.some((e) => e.includes(JSON.stringify(url))),
          `names ${url}`,
        );
      assert.equal(health.errors[8], "2 more virtual workspace URLs of APIExportEndpointSlices refused");
      assert.deepEqual(refused.sort(), forged.map(([, reason]) => reason).sort());
      const warned = logs.filter((l) => l.reason !== undefined);
      assert.deepEqual(
        warned.map((l) => l.url),
        forged.slice(0, 8).map(([u]) => u),
      );

      // The genuine endpoint still answers the consumer it serves (and its second look reads through it).
      const answer = await index.find(vmLookup(), 1);
      assert.equal(answer.ok, true, JSON.stringify(answer));

      assert.equal(seen.otherConnections, 0, "no connection to the other port");
      assert.equal(seen.plainConnections, 0, "no connection to the plain-http server");
      const host = new URL(kcpOrigin).host;
      const stray = seen.kcp.filter((r) => r.host !== host || ![SLICES, VMS, VM_READ].includes(r.path));
      assert.deepEqual(stray, [], "the kcp server saw only the slices and the genuine virtual workspace");
    } finally {
      stop();
    }
  });
});
