import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../src/observability/logger.ts";
import { parseConfig, run, USAGE } from "../../src/cmd/webhook.ts";
import { DEFAULT_LIMITS } from "../../src/webhook/http/limits.ts";
import type { Started } from "../../src/cli/kit.ts";

describe("parseConfig", () => {
  const env = { KUBECONFIG: "/kc" };

  it("has the original's defaults", () => {
    assert.deepEqual(parseConfig([], env), {
      kubeconfig: "/kc",
      apiExportName: "dependencies.opendefense.cloud",
      bindAddress: "0.0.0.0",
      webhookPort: 9443,
      tls: { certFile: "/etc/webhook-tls/tls.crt", keyFile: "/etc/webhook-tls/tls.key" },
      healthProbeBindAddress: ":8081",
      kcpBaseUrl: undefined,
      minTLSVersion: "TLSv1.2",
      lookup: "auto",
      limits: DEFAULT_LIMITS,
      maxRulesPerWorkspace: 200,
      indexMemoryLimit: 240 * 2 ** 20,
    });
  });

  it("takes --max-rules-per-workspace (or its variable) and refuses what is not a positive number", () => {
    const c = parseConfig(["--max-rules-per-workspace=3"], env);
    assert.ok(c !== "help");
    assert.equal(c.maxRulesPerWorkspace, 3);
    const e = parseConfig([], { ...env, MAX_RULES_PER_WORKSPACE: "7" });
    assert.ok(e !== "help");
    assert.equal(e.maxRulesPerWorkspace, 7);
    assert.throws(() => parseConfig(["--max-rules-per-workspace=0"], env), /want a positive whole number, got "0"/);
  });

  it("takes the index memory ceiling in bytes, Ki, Mi or Gi, and refuses anything else with the flag named", () => {
    const limit = (v: string): unknown => {
      const c = parseConfig([`--index-memory-limit=${v}`], env);
      return c === "help" ? c : c.indexMemoryLimit;
    };
    assert.equal(limit("64Mi"), 64 * 2 ** 20);
    assert.equal(limit("2Gi"), 2 * 2 ** 30);
    assert.equal(limit("1048576"), 2 ** 20);
    assert.equal(parseConfig([], { ...env, INDEX_MEMORY_LIMIT: "100Mi" }) !== "help" && 100 * 2 ** 20, 100 * 2 ** 20);
    for (const bad of ["0", "64MB", "1Ki", "-1Mi", "2048Gi", "lots"])
      assert.throws(() => limit(bad), new RegExp(`--index-memory-limit: want bytes from 1Mi to 1024Gi.*"${bad}"`));
  });

  it("takes the transport's limits, flags over environment, and refuses what is not a positive number", () => {
    const c = parseConfig(
      ["--max-concurrent-reviews=32", "--max-connections=512", "--body-timeout=5s", "--min-body-bytes-per-second=1"],
      { ...env, MAX_CONCURRENT_RULE_REVIEWS: "4", MAX_QUEUED_REVIEWS: "8", MAX_CONNECTIONS: "9" },
    );
    assert.ok(c !== "help");
    assert.deepEqual(c.limits, {
      maxConcurrentReviews: 32,
      maxConcurrentRuleReviews: 4,
      maxQueuedReviews: 8,
      maxConnections: 512,
      bodyTimeoutMs: 5_000,
      minBodyBytesPerSecond: 1,
    });
    assert.throws(() => parseConfig(["--max-concurrent-reviews=0"], env), /want a positive whole number, got "0"/);
    assert.throws(() => parseConfig(["--max-connections=lots"], env), /--max-connections: want a positive whole/);
    assert.throws(() => parseConfig(["--body-timeout=10"], env), /--body-timeout: invalid duration/);
  });

  it("enforces rules whose checks were declined only when the operator asks", () => {
    const on = parseConfig(["--enforce-unverified-rules=true"], env);
    assert.ok(on !== "help" && on.enforceUnverifiedRules === true);
    const plain = parseConfig([], env);
    assert.ok(plain !== "help" && plain.enforceUnverifiedRules === undefined);
    assert.throws(() => parseConfig(["--enforce-unverified-rules=maybe"], env), /want true or false/);
  });

  it("serves the legacy /validate route only when asked", () => {
    const c = parseConfig(["--legacy-validate-route=true"], env);
    assert.ok(c !== "help");
    assert.equal(c.legacyValidateRoute, true);
    assert.throws(() => parseConfig(["--legacy-validate-route=maybe"], env), /want true or false/);
  });

  it("takes each --lookup mode (auto, index, live) and refuses others", () => {
    for (const mode of ["live", "index", "auto"]) {
      const c = parseConfig([`--lookup=${mode}`], env);
      assert.ok(c !== "help");
      assert.equal(c.lookup, mode);
    }
    assert.throws(() => parseConfig(["--lookup=cache"], env), /--lookup: want auto, index or live, got "cache"/);
  });

  it("takes caller authentication: a client CA with allowed subjects, and refuses subjects without a CA", () => {
    const c = parseConfig(
      ["--client-ca-file=/ca.pem", "--allowed-client-subjects=CN=kcp, O=kcp-shards", "--tls-min-version=1.3"],
      env,
    );
    assert.ok(c !== "help");
    assert.equal(c.clientCAFile, "/ca.pem");
    assert.deepEqual(c.allowedClientSubjects, ["CN=kcp", "O=kcp-shards"]);
    assert.equal(c.minTLSVersion, "TLSv1.3");
    assert.throws(() => parseConfig(["--allowed-client-subjects=CN=kcp"], env), /needs --client-ca-file/);
    assert.throws(() => parseConfig(["--client-ca-file=/ca", "--allowed-client-subjects=kcp"], env), /is not CN=/);
    assert.throws(() => parseConfig(["--tls-min-version=1.1"], env), /want 1.2 or 1.3/);
  });

  it("takes explicit cert files over the cert dir, and --kubeconfig over $KUBECONFIG", () => {
    const f = parseConfig(
      [
        "--kubeconfig",
        "/x",
        "--tls-cert-file",
        "/c.pem",
        "--tls-key-file",
        "/k.pem",
        "--kcp-base-url",
        "https://p:6443/",
      ],
      env,
    );
    assert.ok(f !== "help");
    assert.equal(f.kubeconfig, "/x");
    assert.deepEqual(f.tls, { certFile: "/c.pem", keyFile: "/k.pem" });
    assert.equal(f.kcpBaseUrl, "https://p:6443");
  });

  const bad: [string[], Record<string, string>, RegExp][] = [
    [["--webhook-port", "x"], env, /^--webhook-port "x" is not a port number$/],
    [["--tls-cert-file", "/c"], env, /^--tls-cert-file and --tls-key-file must be given together$/],
    [["--bogus"], env, /Unknown option '--bogus'.*\(see --help\)$/],
    [[], {}, /^no kubeconfig: set --kubeconfig or \$KUBECONFIG$/],
    [["--kcp-base-url", "kcp:6443"], env, /is not an http\(s\) URL$/],
    [["--health-probe-bind-address", "nope"], env, /^--health-probe-bind-address: invalid listen address/],
  ];
  for (const [argv, e, re] of bad) {
    it(`rejects ${argv.join(" ") || "no kubeconfig"}`, () => {
      assert.throws(() => parseConfig(argv, e), { name: "UsageError", message: re });
    });
  }
});

describe("run", () => {
  let dir: string;
  let kcp: http.Server;
  let slices: unknown[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "webhook-cmd-"));
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", join(dir, "tls.key"), "-out", join(dir, "tls.crt"), "-days", "1", "-subj", "/CN=127.0.0.1",
    ], { stdio: "ignore" }); // prettier-ignore
    // A fake kcp: the dep-ctrl workspace's endpoint slices and (none yet) rule verdicts, and watches that stay open.
    kcp = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const verdicts = url.pathname === "/clusters/root:dep-ctrl/api/v1/namespaces/default/configmaps";
      if (url.pathname !== "/clusters/root:dep-ctrl/apis/apis.kcp.io/v1alpha1/apiexportendpointslices" && !verdicts) {
        return res.writeHead(404).end("{}");
      }
      if (url.searchParams.get("watch") === "true") return res.writeHead(200).write("");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ metadata: { resourceVersion: "1" }, items: verdicts ? [] : slices }));
    });
    await new Promise<void>((r) => kcp.listen(0, "127.0.0.1", () => r()));
    const port = (kcp.address() as AddressInfo).port;
    const kubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters: [{name: kcp, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: kcp, user: u}}]
current-context: c
`;
    writeFileSync(join(dir, "kubeconfig"), kubeconfig(`http://127.0.0.1:${port}/clusters/root:dep-ctrl`));
    writeFileSync(join(dir, "no-workspace.kubeconfig"), kubeconfig(`http://127.0.0.1:${port}`));
  });

  after(async () => {
    kcp.closeAllConnections();
    await new Promise((r) => kcp.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  async function runOnce(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const code = await run(argv, {
      env: {},
      stdout: (l) => (out += l),
      stderr: (l) => (err += l),
      logger: silentLogger(),
      signal: AbortSignal.abort(),
    });
    return { code, out, err };
  }
  // The fake kcp is plain http: only the development flag lets the webhook talk to it.
  const common = () => [
    ...["--tls-cert-dir", dir, "--webhook-port", "0", "--health-probe-bind-address", "127.0.0.1:0"],
    "--allow-insecure-kcp=true",
  ];

  it("--help prints usage and exits 0", async () => {
    assert.deepEqual(await runOnce(["--help"]), { code: 0, out: USAGE, err: "" });
  });

  it("a missing certificate is one line and exit 1", async () => {
    const r = await runOnce(["--kubeconfig", join(dir, "kubeconfig"), "--tls-cert-dir", "/nonexistent"]);
    assert.deepEqual(r, {
      code: 1,
      out: "",
      err: "dependency-webhook: TLS certificate file /nonexistent/tls.crt does not exist\n",
    });
  });

  it("a missing kubeconfig is one line and exit 1", async () => {
    const r = await runOnce(["--kubeconfig", join(dir, "nope"), ...common()]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^dependency-webhook: cannot load kubeconfig .*nope: .*\n$/);
    assert.equal(r.err.split("\n").length, 2);
  });

  it("a kubeconfig without a workspace is one line and exit 1", async () => {
    const r = await runOnce(["--kubeconfig", join(dir, "no-workspace.kubeconfig"), ...common()]);
    assert.equal(r.code, 1);
    assert.match(r.err, /names no kcp workspace: it must end in \/clusters\/<workspace path>/);
  });

  it("no endpoint slice for the export is one line and exit 1", async () => {
    slices = [];
    const r = await runOnce(["--kubeconfig", join(dir, "kubeconfig"), ...common()]);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^dependency-webhook: no APIExportEndpointSlice for APIExport "dependencies.opendefense.cloud"/,
    );
  });

  it("starts, becomes ready with no endpoints yet, and stops on shutdown", async () => {
    slices = [{ metadata: { name: "s" }, spec: { export: { name: "dependencies.opendefense.cloud" } } }];
    const stop = new AbortController();
    let running: Started | undefined;
    const done = run(["--kubeconfig", join(dir, "kubeconfig"), ...common()], {
      env: {},
      stderr: (l) => assert.fail(l),
      logger: silentLogger(),
      signal: stop.signal,
      onStarted: (r) => (running = r),
    });
    const deadline = Date.now() + 5_000;
    let ready = "";
    while (Date.now() < deadline) {
      if (running) {
        const res = await fetch(`http://127.0.0.1:${running.ports["health"]}/readyz`);
        ready = await res.text();
        if (res.status === 200) break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(ready, "ok");
    const metrics = await (await fetch(`http://127.0.0.1:${running!.ports["health"]}/metrics`)).text();
    assert.match(metrics, /dependency_webhook_registry_rules 0/);
    stop.abort();
    assert.equal(await done, 0);
  });
});
