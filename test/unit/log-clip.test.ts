// Every logged field that comes from the network is clipped: a forged review with a megabyte uid, apiVersion, name
// or error yields log lines of bounded size.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino, type Logger } from "pino";
import { Registry } from "prom-client";
import { clip, logSafe, MAX_LOGGED_CHARS, MAX_LOGGED_ITEMS } from "../../src/observability/clip.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/http/server.ts";
import { createRuleAdmissionHandler } from "../../src/webhook/rules/rule-admission.ts";
import { ruleObject } from "./helpers-rules.ts";

/** Far above any clipped line (a few fields of MAX_LOGGED_CHARS), far below the megabyte a forged field carries. */
const MAX_LINE = 8 * 1024;
const HUGE = "x".repeat(512 * 1024);

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: pino({ level: "debug" }, { write: (line: string) => void lines.push(line) }), lines };
}

function assertBounded(lines: string[], message: string): void {
  const matching = lines.filter((l) => (JSON.parse(l) as { msg?: string }).msg === message);
  assert.ok(matching.length > 0, `a "${message}" line was logged`);
  for (const line of matching) assert.ok(line.length < MAX_LINE, `"${message}" line of ${line.length} chars`);
}

describe("clip", () => {
  it("clips strings and lists, and leaves other values", () => {
    assert.equal(String(clip(HUGE)).length, MAX_LOGGED_CHARS + `…(${HUGE.length} chars)`.length);
    const list = clip(Array(100).fill(HUGE)) as string[];
    assert.equal(list.length, MAX_LOGGED_ITEMS + 1);
    assert.equal(list.at(-1), "…(100 items)");
    assert.deepEqual(clip([{ a: HUGE }, 1, null]), ["[…]", 1, null]);
    assert.deepEqual(logSafe({ n: 1, b: true, u: undefined }), { n: 1, b: true, u: undefined });
  });
});

describe("webhook request log lines", () => {
  let dir: string;
  let server: WebhookServer;
  let ca: string;
  const { logger, lines } = capture();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "log-clip-"));
    const [cert, key] = [join(dir, "tls.crt"), join(dir, "tls.key")];
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
      "-out", cert, "-days", "1", "-subj", "/CN=serving", "-addext", "subjectAltName=IP:127.0.0.1",
    ], { stdio: "ignore" }); // prettier-ignore
    ca = readFileSync(cert, "utf8");
    server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: cert, keyFile: key },
      handler: () => Promise.reject(new Error(HUGE)),
      logger,
      metrics: createWebhookMetrics(new Registry()),
    });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (body: unknown) =>
    new Promise<number>((resolve, reject) => {
      const text = JSON.stringify(body);
      const req = https.request(
        {
          host: "127.0.0.1",
          port: server.port,
          path: "/validate/net1",
          method: "POST",
          ca: [ca],
          agent: false,
          headers: { "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      req.end(text);
    });

  it("a malformed review with a huge uid and apiVersion logs a bounded line", async () => {
    assert.equal(await post({ apiVersion: HUGE, kind: "AdmissionReview", request: { uid: HUGE } }), 200);
    assertBounded(lines, "malformed admission review");
  });

  it("a handler failure with a huge uid and error logs a bounded line", async () => {
    const request = {
      uid: HUGE,
      operation: "DELETE",
      resource: { group: "g", version: "v1", resource: "r" },
      name: HUGE,
    };
    assert.equal(await post({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request }), 200);
    assertBounded(lines, "admission handler failed");
  });
});

describe("rule admission log lines", () => {
  const rules = (failure?: string) => {
    const { logger, lines } = capture();
    const handler = createRuleAdmissionHandler({
      deps: {
        fetchExport: () => Promise.reject(new Error(failure ?? "unreachable")),
        resolve: () => Promise.reject(new Error(failure ?? "unreachable")),
      },
      logger,
    });
    return { handler, lines };
  };
  const request = (object: unknown): AdmissionRequest => ({
    uid: HUGE,
    operation: "CREATE",
    resource: { group: "dependencies.opendefense.cloud", version: "v1alpha1", resource: "dependencyrules" },
    name: HUGE,
    object,
  });

  it("a refused rule with a huge name logs a bounded name and message", async () => {
    const { handler, lines } = rules();
    const decision = await handler(request({ metadata: { name: HUGE }, spec: { dependencies: [HUGE] } }));
    assert.equal(decision.allowed, false);
    assertBounded(lines, "rule refused");
  });

  it("a rule check that fails with a huge error logs bounded lines, warnings included", async () => {
    const { handler, lines } = rules(HUGE);
    const object = ruleObject("compute", HUGE.slice(0, 200_000), { resource: "virtualmachines" }, [
      { path: "root:network-provider", group: "network.test.io", resource: "vpcs", fieldPath: ".spec.vpc" },
    ]);
    const decision = await handler(request(object));
    assert.equal(decision.allowed, true);
    assertBounded(lines, "rule check failed");
    assertBounded(lines, "rule accepted with warnings");
  });
});
