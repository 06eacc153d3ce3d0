// Property tests of the HTTP layer and the review parser (fast-check, 10,000 cases each): whatever arrives, the
// server answers (never a crash or a hang), every malformed input is a 4xx with a message, and nothing is allowed
// that the handler would deny: the handler here denies every review it sees, so no answer may carry allowed: true.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { Registry } from "prom-client";
import { silentLogger } from "../../src/observability/logger.ts";
import { deny } from "../../src/webhook/admission.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { parseReview } from "../../src/webhook/http/review.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/http/server.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";
import { readFileSync } from "node:fs";

const RUNS = 10_000;

const validReview = {
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "u",
    kind: { group: "network.example.io", version: "v1", kind: "VPC" },
    resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
    name: "my-vpc",
    namespace: "default",
    operation: "DELETE",
    userInfo: { username: "alice" },
    oldObject: { metadata: { name: "my-vpc", annotations: { "kcp.io/cluster": "consumer1" } } },
    object: null,
  },
};

/** A valid review with one field, at any depth, replaced by anything (or deleted). */
const mutatedReview = fc
  .tuple(
    fc.constantFrom(
      [],
      ["apiVersion"],
      ["kind"],
      ["request"],
      ["request", "uid"],
      ["request", "operation"],
      ["request", "resource"],
      ["request", "resource", "resource"],
      ["request", "resource", "group"],
      ["request", "name"],
      ["request", "namespace"],
      ["request", "userInfo"],
      ["request", "oldObject"],
      ["request", "oldObject", "metadata"],
      ["request", "oldObject", "metadata", "annotations"],
      ["request", "oldObject", "metadata", "annotations", "kcp.io/cluster"],
      ["request", "dryRun"],
    ),
    fc.option(fc.anything({ maxDepth: 3 }), { nil: undefined }),
  )
  .map(([path, value]) => {
    const review = structuredClone(validReview) as Record<string, unknown>;
    if (path.length === 0) return review;
    let node = review;
    for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
    const last = path.at(-1) ?? "";
    if (value === undefined) delete node[last];
    else node[last] = value;
    return review;
  });

const body = fc.oneof(
  { weight: 4, arbitrary: mutatedReview.map((r) => Buffer.from(JSON.stringify(r) ?? "")) },
  { weight: 2, arbitrary: fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v))) },
  { weight: 2, arbitrary: fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)) },
  {
    weight: 1,
    arbitrary: fc.nat({ max: 5000 }).map((n) => Buffer.from("[".repeat(n) + "]".repeat(n))),
  },
  {
    weight: 1,
    // Truncated or padded valid reviews.
    arbitrary: fc
      .tuple(fc.nat(), fc.string({ maxLength: 20 }))
      .map(([cut, tail]) => Buffer.from(JSON.stringify(validReview).slice(0, cut % 400) + tail)),
  },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(70 * 1024, " ")) },
);

const pathSegment = fc
  .array(fc.constantFrom("a", "z", "0", "-", ":", ".", "%2F", "%3A", "%ZZ", "%", "_", "~"), { maxLength: 12 })
  .map((cs) => cs.join(""));
const urlPath = fc.oneof(
  fc.constantFrom("/validate/consumer1", "/validate", "/validate/", "/validate-rules", "/", "/healthz"),
  pathSegment.map((s) => `/validate/${s}`),
  fc.tuple(pathSegment, pathSegment).map(([a, b]) => `/${a}/${b}`),
  pathSegment.map((s) => `/validate/consumer1?${s}`),
);
const contentType = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "text/plain",
  "application/yaml",
  "",
);
const method = fc.constantFrom("POST", "POST", "POST", "POST", "PUT", "GET", "DELETE", "PATCH");

interface Answer {
  status: number;
  text: string;
}

describe("webhook HTTP layer under arbitrary input", () => {
  let dir: string;
  let server: WebhookServer;
  let ca: string;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 4 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "webhook-fuzz-"));
    const certs = makeCerts(dir);
    ca = readFileSync(certs.caCert, "utf8");
    server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: certs.cert, keyFile: certs.key },
      // Denies everything it is asked: whatever reaches it must come back denied.
      handler: () => Promise.resolve(deny("referenced", 409, "Conflict", "denied by the stub")),
      ruleHandler: () => Promise.resolve(deny("invalid-rule", 422, "Invalid", "denied by the stub")),
      logger: silentLogger(),
      metrics: createWebhookMetrics(new Registry()),
      maxBodyBytes: 64 * 1024,
    });
  });

  after(async () => {
    agent.destroy();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function send(m: string, p: string, type: string, payload: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: "127.0.0.1",
          port: server.port,
          path: p,
          method: m,
          ca,
          agent,
          headers: type ? { "content-type": type } : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error(`no answer within 10 s: ${m} ${p}`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  it(`answers ${RUNS} arbitrary requests: 4xx with a message, or a review that is never allowed`, async () => {
    await fc.assert(
      fc.asyncProperty(method, urlPath, contentType, body, async (m, p, type, payload) => {
        const answer = await send(m, p, type, payload);
        assert.ok(answer.text.startsWith("{"), `a JSON answer, not ${answer.status} ${JSON.stringify(answer.text)}`);
        const reply = JSON.parse(answer.text) as {
          kind?: string;
          message?: unknown;
          response?: { allowed?: unknown; status?: { code?: number; message?: unknown } };
        };
        if (answer.status === 200) {
          assert.equal(reply.response?.allowed, false, `allowed: ${answer.text}`);
          const code = reply.response?.status?.code ?? 0;
          assert.ok(code >= 400 && code < 500, `a denial's code is 4xx: ${answer.text}`);
          assert.ok(typeof reply.response?.status?.message === "string" && reply.response.status.message !== "");
          return;
        }
        assert.ok(answer.status >= 400 && answer.status < 500, `4xx, not ${answer.status}: ${answer.text}`);
        assert.equal(reply.kind, "Status");
        assert.ok(typeof reply.message === "string" && reply.message !== "", "the Status has a message");
      }),
      { numRuns: RUNS },
    );
    // Still serving: a valid review is denied by the stub.
    const last = await send(
      "POST",
      "/validate/consumer1",
      "application/json",
      Buffer.from(JSON.stringify(validReview)),
    );
    assert.match(last.text, /denied by the stub/);
  });
});

describe("review parser under arbitrary input", () => {
  it(`never throws; a rejection always has a message (${RUNS} cases)`, () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), mutatedReview), (input) => {
        const parsed = parseReview(input);
        if (!parsed.ok) assert.ok(typeof parsed.message === "string" && parsed.message.length > 0);
        else assert.equal(typeof parsed.request.uid, "string");
      }),
      { numRuns: RUNS },
    );
  });
});
