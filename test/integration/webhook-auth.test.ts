// Caller authentication against a real kcp v0.30.0, over real HTTPS. kcp's ValidatingWebhook admission plugin (read
// in source) suggested kcp presents client credentials to webhooks when started with --admission-control-config-file
// naming the `apis.kcp.io/ValidatingWebhook` plugin. Run, it does not: `kcp start` refuses that flag (it is in kcp's
// disallowedFlags, pkg/server/options/flags.go), so kcp calls webhooks with no client certificate. This file pins
// that evidence (if a later kcp accepts the flag, the first test fails and says to turn caller authentication on in
// the harness): with the webhook requiring a certificate, kcp's own call is refused with 401 and no decision (and
// kcp, failurePolicy Fail, refuses the DELETE), the webhook logging what it saw; strangers without a certificate,
// with one from another CA, or with a subject not on the list get 401 and no decision; an allowed certificate is
// decided. The webhook server runs in-process with a handler that denies one name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import https from "node:https";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { apply, createWorkspace } from "../../tools/kcp/api.ts";
import { makeCerts, type CertFiles } from "../../tools/kcp/certs.ts";
import { issueClientCert, makeClientCA, type ClientCert } from "../../tools/kcp/client-certs.ts";
import { kcpBinDir, startKcp, writeWebhookClientConfig, type Kcp } from "../../tools/kcp/harness.ts";
import { execFile } from "node:child_process";
import { waitFor } from "../../tools/kcp/process.ts";
import { isApiError, type ApiError, type RestClient } from "../../src/kcp/rest.ts";
import { allow, deny, type AdmissionRequest } from "../../src/webhook/admission.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/http/server.ts";

const CONFIGMAPS = "/api/v1/namespaces/default/configmaps";
const KCP_CLIENT_CN = "kcp-webhook-client";

async function del(ws: RestClient, name: string, dryRun = false): Promise<ApiError | undefined> {
  try {
    await ws.request("DELETE", `${CONFIGMAPS}/${name}`, dryRun ? { query: { dryRun: "All" } } : {});
    return undefined;
  } catch (err) {
    if (isApiError(err)) return err;
    throw err;
  }
}

/** POSTs a review straight to the webhook, as a stranger would. */
function post(port: number, ca: string, client?: ClientCert): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/validate/x",
        method: "POST",
        ca,
        agent: false,
        headers: { "content-type": "application/json" },
        ...(client ? { cert: readFileSync(client.cert), key: readFileSync(client.key) } : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    const review = {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "forged",
        operation: "DELETE",
        resource: { group: "", version: "v1", resource: "configmaps" },
        name: "protected",
        namespace: "default",
        oldObject: { metadata: { name: "protected", annotations: { "kcp.io/cluster": "anything" } } },
      },
    };
    req.end(JSON.stringify(review));
  });
}

describe("webhook caller authentication on kcp", () => {
  let dir: string;
  let serving: CertFiles;
  let kcpClient: ClientCert;
  let server: WebhookServer;
  let kcp: Kcp | undefined;
  let ws: RestClient;
  /** Names the handler decided, in order: only authenticated callers reach it. */
  const decided: string[] = [];
  const refusedCallers: string[] = [];

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "webhook-auth-"));
    serving = makeCerts(path.join(dir, "serving"));
    const clientCA = makeClientCA(path.join(dir, "clients"));
    kcpClient = issueClientCert(clientCA, "kcp", { cn: KCP_CLIENT_CN, o: ["kcp"] });
    server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: { certFile: serving.cert, keyFile: serving.key, clientCAFile: clientCA.caCert },
      requireClientCert: true,
      allowedClientSubjects: [`CN=${KCP_CLIENT_CN}`],
      handler: (request: AdmissionRequest) => {
        const name = request.name ?? "";
        decided.push(name);
        return Promise.resolve(
          name === "protected"
            ? deny("referenced", 409, "Conflict", "cannot delete configmaps/protected: still referenced by Test/x")
            : allow("no-dependents"),
        );
      },
      logger: pino(
        { level: "warn" },
        {
          write: (line: string) => {
            const entry = JSON.parse(line) as { msg?: string; caller?: string };
            if (entry.msg?.startsWith("caller refused")) refusedCallers.push(`${entry.msg} (saw: ${entry.caller})`);
          },
        },
      ),
      metrics: createWebhookMetrics(new Registry()),
    });
    // Without --admission-control-config-file: kcp v0.30.0 refuses it (first test).
    kcp = await startKcp();
    await createWorkspace(kcp.admin, "root:auth");
    ws = kcp.ws("root:auth");
    await apply(ws, [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: "auth-test" },
        webhooks: [
          {
            name: "auth-test.dependencies.opendefense.cloud",
            admissionReviewVersions: ["v1"],
            sideEffects: "None",
            failurePolicy: "Fail",
            timeoutSeconds: 10,
            clientConfig: {
              url: `https://127.0.0.1:${server.port}/validate/x`,
              caBundle: readFileSync(serving.caCert).toString("base64"),
            },
            rules: [{ operations: ["DELETE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"] }],
          },
        ],
      },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "protected", namespace: "default" } },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "free", namespace: "default" } },
    ]);
  });

  after(async () => {
    if (kcp) {
      if (process.exitCode) process.stderr.write(`--- kcp log (${kcp.rootDir}) ---\n${kcp.logTail()}\n`);
      await kcp.stop();
    }
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kcp v0.30.0 refuses --admission-control-config-file, so it cannot be given webhook client credentials", async () => {
    const config = writeWebhookClientConfig(dir, {
      certFile: kcpClient.cert,
      keyFile: kcpClient.key,
      hosts: [`127.0.0.1:${server.port}`],
    });
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        path.join(kcpBinDir(), "kcp"),
        ["start", `--root-directory=${path.join(dir, "kcp-flag")}`, `--admission-control-config-file=${config}`],
        { timeout: 30_000 },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
    });
    assert.notEqual(result.code, 0, "kcp must not start with the flag (if it does: enable it in the harness)");
    assert.match(result.stderr, /unknown flag: --admission-control-config-file/);
  });

  it("kcp calls the webhook without a client certificate: refused with 401, no decision, and the DELETE fails", async () => {
    let last: ApiError | undefined;
    await waitFor(
      "kcp calling the webhook",
      async () => {
        last = await del(ws, "protected", true);
        return (last !== undefined && refusedCallers.length > 0) || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    // The evidence for docs/operations.md: what kcp answered, and what the webhook saw of its caller.
    process.stderr.write(`kcp answered: ${last?.status} ${last?.message}\nwebhook saw: ${refusedCallers[0]}\n`);
    assert.match(last?.message ?? "", /failed calling webhook "auth-test\.dependencies\.opendefense\.cloud"/);
    assert.match(last?.message ?? "", /401|Unauthorized|only kcp may call this webhook/);
    assert.match(refusedCallers[0] ?? "", /a client certificate is required \(saw: no client certificate\)/);
    assert.deepEqual(decided, [], "nothing was decided for kcp");
    assert.notEqual(await ws.getOptional(`${CONFIGMAPS}/protected`), undefined, "failurePolicy Fail: still there");
  });

  it("a caller with an allowed certificate from the client CA is decided", async () => {
    const r = await post(server.port, readFileSync(serving.caCert, "utf8"), kcpClient);
    assert.equal(r.status, 200);
    assert.match(r.body, /cannot delete configmaps\/protected: still referenced by Test\/x/);
    assert.deepEqual(decided, ["protected"]);
  });

  const strangers: [string, () => ClientCert | undefined, RegExp][] = [
    ["no certificate", () => undefined, /no client certificate/],
    [
      "a certificate from another CA with kcp's subject",
      () => issueClientCert(makeClientCA(path.join(dir, "forger")), "forged", { cn: KCP_CLIENT_CN, o: ["kcp"] }),
      /not signed by a trusted CA.*CN=kcp-webhook-client/,
    ],
    [
      "a certificate from the trusted CA with another subject",
      () =>
        issueClientCert(
          {
            dir: path.join(dir, "clients"),
            caCert: path.join(dir, "clients/client-ca.crt"),
            caKey: path.join(dir, "clients/client-ca.key"),
          },
          "tenant",
          { cn: "tenant" },
        ),
      /subject is not allowed.*CN=tenant/,
    ],
  ];
  for (const [name, cert, seen] of strangers) {
    it(`a caller with ${name} gets 401 and no decision`, async () => {
      const before = decided.length;
      const r = await post(server.port, readFileSync(serving.caCert, "utf8"), cert());
      assert.equal(r.status, 401);
      assert.match(r.body, /only kcp may call this webhook/);
      assert.doesNotMatch(r.body, /"allowed"|still referenced/);
      assert.equal(decided.length, before, "the handler never ran");
      assert.match(refusedCallers.at(-1) ?? "", seen);
    });
  }
});
