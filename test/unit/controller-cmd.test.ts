// The controller binary's flags and its one-line startup errors (no kcp needed: a local HTTP stand-in answers).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig, run } from "../../src/cmd/controller.ts";
import { readCaBundle } from "../../src/controller/ca-bundle.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { freePort } from "../../tools/kcp/process.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "controller-cmd-"));

function kubeconfig(server: string): string {
  const file = path.join(dir, `kc-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: k, context: {cluster: k, user: u}}]
current-context: k
`,
  );
  return file;
}

async function runCaptured(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; err: string; out: string }> {
  let err = "";
  let out = "";
  // The fake kcp below is plain http: only the development flag lets the controller talk to it.
  const code = await run([...argv, "--allow-insecure-kcp=true"], {
    env,
    logger: silentLogger(),
    stderr: (s) => (err += s),
    stdout: (s) => (out += s),
  });
  return { code, err, out };
}

describe("parseConfig", () => {
  it("has the documented defaults", () => {
    assert.deepEqual(parseConfig(["--webhook-url=https://wh:9443/"], {}), {
      apiExportName: "dependencies.opendefense.cloud",
      webhookUrl: "https://wh:9443",
      healthAddress: ":8081",
      leaderElect: true,
      leaseName: "kcp-dependency-controller",
      maxRulesPerWorkspace: 200,
      leaseNamespace: "default",
      resyncMs: 30_000,
      validateRules: true,
    });
  });

  it("reads environment variables, and flags win over them", () => {
    const env = {
      KUBECONFIG: "/env/kc",
      WEBHOOK_URL: "https://env:1",
      WEBHOOK_CA_BUNDLE_FILE: "/env/ca",
      LEADER_ELECT: "false",
      RESYNC_PERIOD: "2m",
      API_EXPORT_NAME: "env.export",
    };
    const c = parseConfig(["--webhook-url", "https://flag:2", "--resync-period=45s"], env);
    assert.ok(c !== "help");
    assert.deepEqual(
      [c.kubeconfig, c.webhookUrl, c.caBundleFile, c.leaderElect, c.resyncMs, c.apiExportName],
      ["/env/kc", "https://flag:2", "/env/ca", false, 45_000, "env.export"],
    );
  });

  for (const [argv, message] of [
    [[], /--webhook-url is required/],
    [["--webhook-url=http://wh:80"], /only calls webhooks over https/],
    [["--webhook-url=https://wh/?a=b"], /may not carry a query/],
    [["--webhook-url=nope"], /is not a URL/],
    [["--webhook-url=https://wh", "--resync-period=5"], /invalid duration "5"/],
    [["--webhook-url=https://wh", "--leader-elect=maybe"], /want true or false/],
    [["--webhook-url=https://wh", "--bogus"], /Unknown option '--bogus'/],
  ] as const) {
    it(`refuses ${JSON.stringify(argv)}`, () => assert.throws(() => parseConfig([...argv], {}), message));
  }
});

describe("readCaBundle", () => {
  it("refuses a missing file and a file without a certificate", () => {
    assert.throws(
      () => readCaBundle(path.join(dir, "missing.pem")),
      /cannot read webhook CA bundle .*missing\.pem: ENOENT/,
    );
    const junk = path.join(dir, "junk.pem");
    writeFileSync(junk, "not a certificate");
    assert.throws(() => readCaBundle(junk), /holds no PEM certificate/);
    const broken = path.join(dir, "broken.pem");
    writeFileSync(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert.throws(() => readCaBundle(broken), /holds an unreadable certificate/);
  });
});

describe("run: startup errors are one clear line and exit code 1", () => {
  let server: http.Server;
  let base = "";
  let slices: unknown[] = [];
  let status = 200;
  before(async () => {
    server = http.createServer((req, res) => {
      // The rule verdicts: none yet (a watch stays open).
      if (req.url?.includes("/api/v1/namespaces/default/configmaps?")) {
        if (req.url.includes("watch=true")) return void res.writeHead(200).write("");
        return void res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ metadata: { resourceVersion: "1" }, items: [] }));
      }
      if (req.url?.includes("/apiexportendpointslices")) {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(
          JSON.stringify(
            status === 200
              ? { metadata: {}, items: slices }
              : { kind: "Status", reason: "Forbidden", message: "access denied" },
          ),
        );
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it("prints usage for --help", async () => {
    const r = await runCaptured(["--help"]);
    assert.equal(r.code, 0);
    assert.match(r.out, /--webhook-ca-bundle-file/);
  });

  it("a kubeconfig that names no workspace", async () => {
    const r = await runCaptured([`--kubeconfig=${kubeconfig(base)}`, "--webhook-url=https://wh"]);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^controller: kubeconfig server http:\/\/127\.0\.0\.1:\d+ names no kcp workspace: it must end in \/clusters\/<workspace path>/,
    );
    assert.equal(r.err.trim().split("\n").length, 1);
  });

  it("a missing kubeconfig file", async () => {
    const r = await runCaptured([`--kubeconfig=${path.join(dir, "nope")}`, "--webhook-url=https://wh"]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^controller: cannot load kubeconfig .*nope/);
  });

  it("an unreadable CA bundle", async () => {
    const r = await runCaptured([
      `--kubeconfig=${kubeconfig(`${base}/clusters/root:dep-ctrl`)}`,
      "--webhook-url=https://wh",
      `--webhook-ca-bundle-file=${path.join(dir, "none.pem")}`,
    ]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^controller: cannot read webhook CA bundle/);
  });

  it("no endpoint slice for the export: apply deploy/kcp", async () => {
    slices = [];
    const r = await runCaptured([
      `--kubeconfig=${kubeconfig(`${base}/clusters/root:dep-ctrl`)}`,
      "--webhook-url=https://wh",
    ]);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^controller: no APIExportEndpointSlice for APIExport "dependencies\.opendefense\.cloud" in workspace root:dep-ctrl: apply the manifests in deploy\/kcp\//,
    );
  });

  it("no permission to read endpoint slices: apply the RBAC", async () => {
    status = 403;
    const r = await runCaptured([
      `--kubeconfig=${kubeconfig(`${base}/clusters/root:dep-ctrl`)}`,
      "--webhook-url=https://wh",
    ]);
    status = 200;
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^controller: not allowed to list APIExportEndpointSlices in root:dep-ctrl .*deploy\/rbac\/dep-ctrl-workspace\.yaml/,
    );
  });

  it("kcp unreachable", async () => {
    const r = await runCaptured([
      `--kubeconfig=${kubeconfig("http://127.0.0.1:1/clusters/root:dep-ctrl")}`,
      "--webhook-url=https://wh",
    ]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^controller: cannot reach kcp at http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
  });

  it("starts, serves /readyz and /metrics, and stops on abort", async () => {
    slices = [{ metadata: { name: "s" }, spec: { export: { name: "dependencies.opendefense.cloud" } }, status: {} }];
    const ac = new AbortController();
    const port = await freePort();
    const running = run(
      [
        `--kubeconfig=${kubeconfig(`${base}/clusters/root:dep-ctrl`)}`,
        "--webhook-url=https://wh",
        "--leader-elect=false",
        `--health-probe-bind-address=127.0.0.1:${port}`,
        "--allow-insecure-kcp=true",
      ],
      { env: {}, logger: silentLogger(), signal: ac.signal, stderr: () => undefined },
    );
    // A generous bound (1,200 polls): on a loaded 2-core machine the first list can take seconds; the test waits for
    // the condition.
    let ready = 0;
    for (let attempt = 0; attempt < 1_200 && ready !== 200; attempt++) {
      await new Promise((r) => setTimeout(r, 50));
      ready = (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status ?? 0;
    }
    assert.equal(ready, 200, "ready once the (empty) endpoint slice is listed");
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /dependency_controller_leader 1/);
    ac.abort();
    assert.equal(await running, 0);
  });
});
