import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { X509Certificate } from "node:crypto";
import { pino } from "pino";
import { Registry } from "prom-client";
import type { DependencyRule } from "../../src/api/types.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { createAdmissionHandler, type AdmissionHandler } from "../../src/webhook/deletion/handler.ts";
import type { DependentFinder } from "../../src/webhook/deletion/finder.ts";
import { matchingDependents } from "../../src/webhook/deletion/matching.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { buildRegistry, type RuleRegistry } from "../../src/webhook/rules/registry.ts";
import { LEGACY_ROUTE_DISABLED, route } from "../../src/webhook/http/routes.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/http/server.ts";
import { issueClientCert, makeClientCA, type ClientCert } from "../../tools/kcp/client-certs.ts";

/** A self-signed certificate for 127.0.0.1, made by the openssl CLI. */
function makeCert(dir: string, cn: string): { cert: string; key: string } {
  const cert = join(dir, `${cn}.crt`);
  const key = join(dir, `${cn}.key`);
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", key, "-out", cert, "-days", "1", "-subj", `/CN=${cn}`, "-addext", "subjectAltName=IP:127.0.0.1",
  ], { stdio: "ignore" }); // prettier-ignore
  return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
  fingerprint: string;
}

function post(port: number, ca: string[], path: string, body: string | Buffer, headers: Record<string, string> = {}) {
  return new Promise<Reply>((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: headers["x-method"] ?? "POST",
        ca,
        agent: false,
        headers: { "content-type": "application/json", ...headers },
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown>, fingerprint });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const rule = {
  metadata: { name: "vm-needs-vpc", annotations: { "kcp.io/cluster": "rules1" } },
  spec: {
    dependent: {
      apiExportName: "c",
      group: "compute.example.io",
      version: "v1",
      kind: "VirtualMachine",
      resource: "virtualmachines",
    },
    dependencies: [
      {
        apiExportRef: { path: "root:network", name: "network" },
        group: "network.example.io",
        version: "v1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpcRef.name" },
      },
    ],
  },
} as unknown as DependencyRule;

function review(opts: { uid?: string; name?: string; oldObject?: unknown; apiVersion?: string; kind?: string } = {}) {
  const name = opts.name ?? "my-vpc";
  return {
    apiVersion: opts.apiVersion ?? "admission.k8s.io/v1",
    kind: opts.kind ?? "AdmissionReview",
    request: {
      uid: opts.uid ?? "uid-1",
      kind: { group: "network.example.io", version: "v1", kind: "VPC" },
      resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
      name,
      operation: "DELETE",
      userInfo: { username: "alice" },
      oldObject:
        "oldObject" in opts ? opts.oldObject : { metadata: { name, annotations: { "kcp.io/cluster": "consumer1" } } },
      object: null,
      dryRun: false,
    },
  };
}
const json = (v: unknown) => JSON.stringify(v);
const status = (code: number, reason: string, message: string) => ({
  apiVersion: "v1",
  kind: "Status",
  metadata: {},
  status: "Failure",
  code,
  reason,
  message,
});

describe("webhook HTTPS server", () => {
  let dir: string;
  let ca: string[];
  let server: WebhookServer;
  let registry: RuleRegistry | undefined;
  let throwFromHandler = false;
  /** Starts another server on the same certificate, handler and metrics, logging into logLines. */
  let start: (extra?: Partial<Parameters<typeof startWebhookServer>[0]>) => Promise<WebhookServer>;
  const metricsRegistry = new Registry();
  const logLines: Record<string, unknown>[] = [];
  const dependents = [{ metadata: { name: "my-vm", namespace: "default" }, spec: { vpcRef: { name: "my-vpc" } } }];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "webhook-test-"));
    const first = makeCert(dir, "first");
    writeFileSync(join(dir, "tls.crt"), first.cert);
    writeFileSync(join(dir, "tls.key"), first.key);
    ca = [first.cert];
    registry = buildRegistry([rule], new Map([["root:network", { ok: true, cluster: "net1" as never }]]));
    const finder: DependentFinder = {
      find: (lookup) =>
        Promise.resolve({ ok: true, dependents: matchingDependents(dependents, lookup), complete: true }),
    };
    const logger = pino(
      { level: "info" },
      { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const metrics = createWebhookMetrics(metricsRegistry);
    const real = createAdmissionHandler({ registry: () => registry, finder, logger, metrics });
    const handler: AdmissionHandler = (req, provider) => {
      if (throwFromHandler) throw new Error("boom");
      return real(req, provider);
    };
    start = (extra = {}) =>
      startWebhookServer({
        host: "127.0.0.1",
        port: 0,
        tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
        handler,
        logger,
        metrics,
        maxBodyBytes: 64 * 1024,
        certPollMs: 100,
        ...extra,
      });
    server = await start({ logger: silentLogger() });
  });

  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (path: string, body: string | Buffer, headers?: Record<string, string>) =>
    post(server.port, ca, path, body, headers);

  it("denies a referenced DELETE with 409 Conflict and the message, echoing the uid", async () => {
    const r = await send("/validate/net1", json(review()));
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: "uid-1",
        allowed: false,
        status: {
          status: "Failure",
          code: 409,
          reason: "Conflict",
          message: "cannot delete vpcs/my-vpc: still referenced by VirtualMachine/default/my-vm",
          details: {
            causes: [{ reason: "ReferencedBy", message: "VirtualMachine/default/my-vm", field: ".spec.vpcRef.name" }],
          },
        },
      },
    });
    const line = logLines.find((l) => l["msg"] === "delete denied: still referenced");
    assert.ok(line, "one structured log line per denial");
    assert.equal(line["workspace"], "consumer1");
    assert.equal(line["user"], "alice");
    assert.deepEqual(line["blockers"], ["VirtualMachine/default/my-vm"]);
  });

  it("allows an unreferenced DELETE", async () => {
    const r = await send("/validate/net1", json(review({ uid: "uid-2", name: "free" })));
    assert.deepEqual(r.body["response"], { uid: "uid-2", allowed: true });
  });

  it("another provider's URL does not see this provider's rules", async () => {
    const r = await send("/validate/net2", json(review({ uid: "uid-3" })));
    assert.deepEqual(r.body["response"], { uid: "uid-3", allowed: true });
  });

  it("legacy /validate is off by default: 404 saying the route is disabled, and no decision", async () => {
    const before = logLines.length;
    const legacyOff = await start();
    try {
      for (const path of ["/validate", "/validate/", "/validate?timeout=10s"]) {
        const r = await post(legacyOff.port, ca, path, json(review({ uid: "uid-4" })));
        assert.equal(r.status, 404, path);
        assert.deepEqual(r.body, status(404, "NotFound", LEGACY_ROUTE_DISABLED), path);
      }
      assert.match(LEGACY_ROUTE_DISABLED, /disabled.*every provider.*\/validate\/<provider logical cluster>/);
      const warned = logLines.slice(before).filter((l) => l["msg"] === LEGACY_ROUTE_DISABLED);
      assert.equal(warned.length, 1, "the misconfiguration is logged once, not on every request");
    } finally {
      await legacyOff.close();
    }
  });

  it("legacy /validate, when enabled, matches across providers", async () => {
    const legacy = await start({ legacyValidateRoute: true });
    try {
      const r = await post(legacy.port, ca, "/validate", json(review({ uid: "uid-4" })));
      assert.equal((r.body["response"] as { allowed: boolean }).allowed, false);
      const free = await post(legacy.port, ca, "/validate/", json(review({ uid: "uid-5", name: "free" })));
      assert.deepEqual(free.body["response"], { uid: "uid-5", allowed: true });
    } finally {
      await legacy.close();
    }
  });

  const denied400 = (uid: string, message: string) => ({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid, allowed: false, status: { status: "Failure", code: 400, reason: "BadRequest", message } },
  });

  const malformed: {
    name: string;
    path?: string;
    body: string;
    headers?: Record<string, string>;
    status: number;
    want: unknown;
  }[] = [
    {
      name: "wrong content type",
      body: json(review()),
      headers: { "content-type": "text/plain" },
      status: 415,
      want: status(415, "UnsupportedMediaType", 'content type "text/plain" not supported: want application/json'),
    },
    {
      name: "empty body",
      body: "",
      status: 400,
      want: status(400, "BadRequest", "request body is empty: want an AdmissionReview"),
    },
    {
      name: "a JSON array",
      body: "[1,2]",
      status: 400,
      want: status(400, "BadRequest", "request body is not an AdmissionReview object"),
    },
    {
      name: "wrong apiVersion, uid readable",
      body: json(review({ uid: "u-v1beta1", apiVersion: "admission.k8s.io/v1beta1" })),
      status: 200,
      want: denied400(
        "u-v1beta1",
        'unsupported AdmissionReview apiVersion "admission.k8s.io/v1beta1": this webhook serves admission.k8s.io/v1 (set admissionReviewVersions: ["v1"])',
      ),
    },
    {
      name: "wrong kind, no uid",
      body: json({ apiVersion: "admission.k8s.io/v1", kind: "Pod" }),
      status: 400,
      want: status(400, "BadRequest", 'unexpected kind "Pod": want AdmissionReview'),
    },
    {
      name: "no request",
      body: json({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }),
      status: 400,
      want: status(400, "BadRequest", "AdmissionReview has no request"),
    },
    {
      name: "no uid",
      body: json({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { operation: "DELETE" } }),
      status: 400,
      want: status(400, "BadRequest", "AdmissionReview request has no uid"),
    },
    {
      name: "DELETE without oldObject",
      body: json(review({ uid: "u-noold", oldObject: null })),
      status: 200,
      want: denied400("u-noold", "DELETE request has no oldObject: cannot tell which object is being deleted"),
    },
    {
      name: "unknown path",
      path: "/mutate",
      body: json(review()),
      status: 404,
      want: status(404, "NotFound", "no handler for /mutate: use /validate/<provider logical cluster>"),
    },
    {
      name: "not a logical cluster in the path",
      path: "/validate/Net%2F1",
      body: json(review()),
      status: 400,
      want: status(400, "BadRequest", '"Net/1" in the URL is not a logical cluster name'),
    },
    {
      name: "GET",
      body: "",
      headers: { "x-method": "GET" },
      status: 405,
      want: status(405, "MethodNotAllowed", "method GET not allowed: POST an AdmissionReview"),
    },
  ];
  for (const c of malformed) {
    it(`answers ${c.status} for ${c.name}`, async () => {
      const r = await send(c.path ?? "/validate/net1", c.body, c.headers);
      assert.equal(r.status, c.status);
      assert.deepEqual(r.body, c.want);
    });
  }

  it("answers 400 naming the JSON error for a body that is not JSON", async () => {
    const r = await send("/validate/net1", "{not json");
    assert.equal(r.status, 400);
    assert.match(String(r.body["message"]), /^request body is not JSON: /);
  });

  it("answers 413 for a body over the limit (declared length)", async () => {
    const r = await send("/validate/net1", Buffer.alloc(70 * 1024, " "));
    assert.equal(r.status, 413);
    assert.deepEqual(
      r.body,
      status(413, "RequestEntityTooLarge", "request body of 71680 bytes exceeds the limit of 65536 bytes"),
    );
  });

  it("answers 413 for a chunked body over the limit", async () => {
    const r = await new Promise<Reply>((resolve, reject) => {
      const req = https.request(
        { host: "127.0.0.1", port: server.port, path: "/validate/net1", method: "POST", ca, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
              fingerprint: "",
            }),
          );
        },
      );
      req.setHeader("content-type", "application/json");
      req.on("error", reject);
      for (let i = 0; i < 10; i++) req.write(Buffer.alloc(8 * 1024, " "));
      req.end();
    });
    assert.equal(r.status, 413);
    assert.equal(r.body["message"], "request body exceeds the limit of 65536 bytes");
  });

  it("denies every DELETE with 503 while the registry is not synced", async () => {
    const saved = registry;
    registry = undefined;
    try {
      const r = await send("/validate/net1", json(review({ uid: "u-sync", name: "free" })));
      assert.deepEqual(r.body["response"], {
        uid: "u-sync",
        allowed: false,
        status: {
          status: "Failure",
          code: 503,
          reason: "ServiceUnavailable",
          message: "dependency webhook is starting: rule registry not yet synced, retry later",
        },
      });
    } finally {
      registry = saved;
    }
  });

  it("turns an unexpected handler exception into a 500 denial carrying the uid", async () => {
    throwFromHandler = true;
    try {
      const r = await send("/validate/net1", json(review({ uid: "u-boom" })));
      assert.equal(r.status, 200);
      assert.deepEqual(r.body["response"], {
        uid: "u-boom",
        allowed: false,
        // The exception's text goes to the log, never to the caller.
        status: { status: "Failure", code: 500, reason: "InternalError", message: "internal error, retry later" },
      });
    } finally {
      throwFromHandler = false;
    }
  });

  it("keeps serving after all of the above, and counted the decisions", async () => {
    const r = await send("/validate/net1", json(review({ uid: "u-last" })));
    assert.equal((r.body["response"] as { uid: string }).uid, "u-last");
    const text = await metricsRegistry.metrics();
    assert.match(text, /dependency_webhook_decisions_total\{outcome="denied",reason="referenced"\} 3/);
    assert.match(text, /dependency_webhook_decisions_total\{outcome="errored",reason="bad-request"\} \d+/);
    assert.match(text, /dependency_webhook_decisions_total\{outcome="errored",reason="not-synced"\} 1/);
    // Every response is counted once, transport refusals included: 404 (wrong path), 405, 415, 413 ...
    for (const code of ["200", "409", "404", "405", "415"])
      assert.match(text, new RegExp(`dependency_webhook_responses_total\\{code="${code}"\\} [1-9]`), code);
  });

  it("serves a certificate rotated on disk without a restart, and refuses a broken one", async () => {
    const firstFp = new X509Certificate(ca[0]!).fingerprint256;
    assert.equal((await send("/validate/net1", json(review()))).fingerprint, firstFp);

    const second = makeCert(dir, "second");
    ca.push(second.cert);
    // Replace both files atomically, as a Secret volume update would.
    writeFileSync(join(dir, "new.key"), second.key);
    writeFileSync(join(dir, "new.crt"), second.cert);
    renameSync(join(dir, "new.key"), join(dir, "tls.key"));
    renameSync(join(dir, "new.crt"), join(dir, "tls.crt"));
    const secondFp = new X509Certificate(second.cert).fingerprint256;
    const deadline = Date.now() + 5_000;
    let fp = "";
    while (Date.now() < deadline) {
      fp = (await send("/validate/net1", json(review()))).fingerprint;
      if (fp === secondFp) break;
      await delay(50);
    }
    assert.equal(fp, secondFp, "new certificate served after the files changed");

    // A mismatched pair (new cert, old key) is refused; the previous pair stays in service.
    const third = makeCert(dir, "third");
    writeFileSync(join(dir, "tls.crt"), third.cert);
    assert.equal(server.reloadCertificate(), false);
    assert.equal((await send("/validate/net1", json(review()))).fingerprint, secondFp);
    writeFileSync(join(dir, "tls.crt"), second.cert);
  });
});

describe("route", () => {
  it("parses provider paths", () => {
    assert.deepEqual(route("/validate/2x7k9abc?timeout=10s"), { ok: true, provider: "2x7k9abc" });
    assert.deepEqual(route("/validate"), { ok: false, code: 404, message: LEGACY_ROUTE_DISABLED });
    assert.deepEqual(route("/validate/", { legacyValidateRoute: false }), {
      ok: false,
      code: 404,
      message: LEGACY_ROUTE_DISABLED,
    });
    assert.deepEqual(route("/validate", { legacyValidateRoute: true }), { ok: true, provider: undefined });
    assert.deepEqual(route("/validate/?x=1", { legacyValidateRoute: true }), { ok: true, provider: undefined });
    assert.deepEqual(route("/validate-rules"), { ok: true, provider: undefined, rules: true });
    assert.deepEqual(route("/validate/%zz"), {
      ok: false,
      code: 400,
      message: '"%zz" in the URL is not a logical cluster name',
    });
  });
});

/** A POST with full control: client certificate, agent, body; resolves with the status and the parsed body. */
function request(
  port: number,
  opts: { ca: string[]; cert?: string; key?: string; agent?: https.Agent | false; body?: string; path?: string },
): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: opts.path ?? "/validate/net1",
        method: "POST",
        ca: opts.ca,
        ...(opts.cert ? { cert: opts.cert, key: opts.key } : {}),
        agent: opts.agent ?? false,
        headers: { "content-type": "application/json" },
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
    req.end(opts.body ?? json(review()));
  });
}

describe("webhook HTTPS server: bounded work", () => {
  let dir: string;
  let ca: string[];
  let server: WebhookServer;
  const metricsRegistry = new Registry();
  const refusals: string[] = [];
  /** Reviews the stub handler holds until the test releases them. */
  const held: (() => void)[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "webhook-bounds-"));
    const pair = makeCert(dir, "serving");
    writeFileSync(join(dir, "tls.crt"), pair.cert);
    writeFileSync(join(dir, "tls.key"), pair.key);
    ca = [pair.cert];
    server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
      handler: () => new Promise((resolve) => held.push(() => resolve({ allowed: true, reason: "no-dependents" }))),
      logger: silentLogger(),
      metrics: createWebhookMetrics(metricsRegistry),
      maxConcurrentReviews: 2,
      maxQueuedReviews: 0, // no queue: the third review is refused at once
      maxConnections: 3,
      onRefusal: (reason) => refusals.push(reason),
    });
  });

  after(async () => {
    for (const release of held) release();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers 429 at once, with a retry message, when every review slot is taken; decides again once one frees", async () => {
    const first = request(server.port, { ca });
    const second = request(server.port, { ca });
    await waitUntil(() => held.length === 2);
    const third = await request(server.port, { ca });
    assert.equal(third.status, 429);
    assert.equal(third.headers["retry-after"], "1");
    assert.deepEqual(
      third.body,
      status(429, "TooManyRequests", "the webhook is deciding 2 reviews already, retry in a second"),
    );
    assert.deepEqual(refusals, ["too-many-reviews"]);
    held.splice(0).forEach((release) => release());
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    const fourth = request(server.port, { ca });
    await waitUntil(() => held.length === 1);
    held.splice(0).forEach((release) => release());
    assert.deepEqual((await fourth).body["response"], { uid: "uid-1", allowed: true });
    const text = await metricsRegistry.metrics();
    assert.match(text, /dependency_webhook_responses_total\{code="429"\} 1/);
  });

  it("answers 429 on a connection past the cap and closes it", async () => {
    refusals.length = 0;
    // Three idle keep-alive connections fill the cap; the fourth connection's request is refused.
    const agents = [0, 1, 2].map(() => new https.Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      for (const agent of agents) {
        const r = request(server.port, { ca, agent });
        await waitUntil(() => held.length === 1);
        held.splice(0).forEach((release) => release());
        assert.equal((await r).status, 200);
      }
      const over = await request(server.port, { ca });
      assert.equal(over.status, 429);
      assert.match(String(over.body["message"]), /the webhook has 3 connections open, retry in a second/);
      assert.equal(over.headers["connection"], "close");
      assert.deepEqual(refusals, ["too-many-connections"]);
    } finally {
      for (const agent of agents) agent.destroy();
    }
  });
});

describe("webhook HTTPS server: caller authentication", () => {
  let dir: string;
  let servingCA: string[];
  let server: WebhookServer;
  const refusals: string[] = [];
  const logLines: Record<string, unknown>[] = [];
  let kcp: ClientCert;
  let otherCN: ClientCert;
  let byDNS: ClientCert;
  let stranger: ClientCert;
  let decided = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "webhook-auth-"));
    const pair = makeCert(dir, "serving");
    writeFileSync(join(dir, "tls.crt"), pair.cert);
    writeFileSync(join(dir, "tls.key"), pair.key);
    servingCA = [pair.cert];
    const clientCA = makeClientCA(join(dir, "trusted"));
    copyFileSync(clientCA.caCert, join(dir, "client-ca.crt"));
    kcp = issueClientCert(clientCA, "kcp", { cn: "kcp", o: ["system:kcp"] });
    otherCN = issueClientCert(clientCA, "tenant", { cn: "tenant" });
    byDNS = issueClientCert(clientCA, "front-proxy", { cn: "x", dns: ["kcp.example.com"] });
    stranger = issueClientCert(makeClientCA(join(dir, "untrusted")), "kcp", { cn: "kcp", o: ["system:kcp"] });
    server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key"), clientCAFile: join(dir, "client-ca.crt") },
      handler: () => {
        decided++;
        return Promise.resolve({ allowed: true, reason: "no-dependents" });
      },
      logger: pino(
        { level: "info" },
        { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
      ),
      metrics: createWebhookMetrics(new Registry()),
      requireClientCert: true,
      allowedClientSubjects: ["CN=kcp", "DNS=kcp.example.com"],
      minTLSVersion: "TLSv1.3",
      onRefusal: (reason) => refusals.push(reason),
    });
  });

  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const withCert = (c: ClientCert) => ({
    ca: servingCA,
    cert: readFileSync(c.cert, "utf8"),
    key: readFileSync(c.key, "utf8"),
  });

  it("decides for a caller whose certificate the CA signed and whose CN or DNS name is allowed", async () => {
    for (const c of [kcp, byDNS]) {
      const r = await request(server.port, withCert(c));
      assert.equal(r.status, 200);
      assert.deepEqual(r.body["response"], { uid: "uid-1", allowed: true });
    }
    assert.equal(decided, 2);
  });

  const refused: [string, () => Parameters<typeof request>[1], string, RegExp][] = [
    ["no certificate", () => ({ ca: servingCA }), "a client certificate is required", /no client certificate/],
    [
      "a certificate from another CA, same subject",
      () => withCert(stranger),
      "the client certificate is not signed by a trusted CA",
      /CN=kcp, O=system:kcp \(/,
    ],
    [
      "a trusted certificate with a subject not on the list",
      () => withCert(otherCN),
      "the client certificate's subject is not allowed to call this webhook",
      /CN=tenant/,
    ],
  ];
  for (const [name, opts, message, seen] of refused) {
    it(`answers 401 and decides nothing for ${name}, logging what it saw`, async () => {
      const before = decided;
      const r = await request(server.port, opts());
      assert.equal(r.status, 401);
      assert.deepEqual(r.body, status(401, "Unauthorized", `${message}: only kcp may call this webhook`));
      assert.equal(decided, before, "no decision");
      const line = logLines.findLast((l) => String(l["msg"]).startsWith("caller refused"));
      assert.match(String(line?.["caller"]), seen);
      assert.equal(refusals.at(-1), "unauthenticated");
    });
  }

  it("refuses TLS 1.2 when the minimum is 1.3", async () => {
    await assert.rejects(
      new Promise((resolve, reject) => {
        const req = https.request(
          { host: "127.0.0.1", port: server.port, method: "POST", ca: servingCA, agent: false, maxVersion: "TLSv1.2" },
          resolve,
        );
        req.on("error", reject);
        req.end("{}");
      }),
      /protocol|version/i,
    );
  });

  it("refuses to start with an allow-list entry it cannot read, or without a CA bundle", async () => {
    const base = {
      host: "127.0.0.1",
      port: 0,
      handler: () => Promise.resolve({ allowed: true as const, reason: "no-dependents" as const }),
      logger: silentLogger(),
      metrics: createWebhookMetrics(new Registry()),
      requireClientCert: true,
    };
    const tls = { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") };
    await assert.rejects(startWebhookServer({ ...base, tls }), /requireClientCert needs tls\.clientCAFile/);
    await assert.rejects(
      startWebhookServer({
        ...base,
        tls: { ...tls, clientCAFile: join(dir, "client-ca.crt") },
        allowedClientSubjects: ["kcp"],
      }),
      /allowed client subject "kcp": want CN=<name>, O=<organization> or DNS=<name>/,
    );
  });
});

async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await delay(10);
  assert.ok(cond(), "condition reached");
}

describe("webhook HTTPS server: client CA reload", () => {
  it("trusts a new client CA written to the file, and no longer the old one, without a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhook-ca-reload-"));
    const pair = makeCert(dir, "serving");
    writeFileSync(join(dir, "tls.crt"), pair.cert);
    writeFileSync(join(dir, "tls.key"), pair.key);
    const oldCA = makeClientCA(join(dir, "old"));
    const newCA = makeClientCA(join(dir, "new"));
    const fromOld = issueClientCert(oldCA, "kcp", { cn: "kcp" });
    const fromNew = issueClientCert(newCA, "kcp", { cn: "kcp" });
    const caFile = join(dir, "client-ca.crt");
    copyFileSync(oldCA.caCert, caFile);
    const server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key"), clientCAFile: caFile },
      handler: () => Promise.resolve({ allowed: true, reason: "no-dependents" }),
      logger: silentLogger(),
      metrics: createWebhookMetrics(new Registry()),
      requireClientCert: true,
      certPollMs: 60_000,
    });
    const call = (c: ClientCert) =>
      request(server.port, { ca: [pair.cert], cert: readFileSync(c.cert, "utf8"), key: readFileSync(c.key, "utf8") });
    try {
      assert.equal((await call(fromOld)).status, 200);
      assert.equal((await call(fromNew)).status, 401);
      writeFileSync(caFile, "not a certificate");
      assert.equal(server.reloadCertificate(), false, "a broken bundle is refused");
      assert.equal((await call(fromOld)).status, 200, "and the old one kept");
      copyFileSync(newCA.caCert, caFile);
      assert.equal(server.reloadCertificate(), true);
      assert.equal((await call(fromNew)).status, 200);
      assert.equal((await call(fromOld)).status, 401);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
