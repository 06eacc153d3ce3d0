// How the binaries may reach kcp: a plain-http server or insecure-skip-tls-verify in the kubeconfig (and an http
// --kcp-base-url) stops both binaries at start with one line and exit code 2, before any request, unless the
// development flag --allow-insecure-kcp=true says otherwise; --virtual-workspace-origins reaches the webhook's config.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig as parseController, run as runController } from "../../src/cmd/controller.ts";
import { parseConfig as parseWebhook, run as runWebhook } from "../../src/cmd/webhook.ts";
import { insecureTransport, loadKcpConnection, InsecureKcpError } from "../../src/kcp/kubeconfig.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";

let dir: string;
let tls: string[];
/** A local port that counts connections: nothing may reach it when the binary refuses to start. */
let listener: net.Server;
let connections = 0;
let port = 0;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "kcp-access-"));
  const certs = makeCerts(path.join(dir, "tls"));
  tls = [`--tls-cert-file=${certs.cert}`, `--tls-key-file=${certs.key}`];
  listener = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  port = (listener.address() as net.AddressInfo).port;
});

after(async () => {
  await new Promise((r) => listener.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function kubeconfig(server: string, cluster = ""): string {
  const file = path.join(dir, `kc-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "${server}"${cluster}}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: k, context: {cluster: k, user: u}}]
current-context: k
`,
  );
  return file;
}

type Runner = typeof runController;
async function runOnce(run: Runner, argv: string[]): Promise<{ code: number; err: string }> {
  let err = "";
  const code = await run(argv, {
    env: {},
    logger: silentLogger(),
    stdout: () => undefined,
    stderr: (s) => (err += s),
    signal: AbortSignal.abort(),
  });
  return { code, err };
}

const binaries: [string, Runner, string[]][] = [
  ["controller", runController, ["--webhook-url=https://wh", "--health-probe-bind-address=127.0.0.1:0"]],
  ["dependency-webhook", runWebhook, ["--webhook-port=0", "--health-probe-bind-address=127.0.0.1:0"]],
];

describe("an insecure kcp connection stops both binaries at start", () => {
  for (const [name, run, args] of binaries) {
    const argv = () => [...args, ...(name === "dependency-webhook" ? tls : [])];

    it(`${name}: a plain-http server is one line and exit 2, and nothing is sent`, async () => {
      connections = 0;
      const kc = kubeconfig(`http://127.0.0.1:${port}/clusters/root:dep-ctrl`);
      const r = await runOnce(run, [`--kubeconfig=${kc}`, ...argv()]);
      assert.equal(r.code, 2);
      assert.equal(
        r.err,
        `${name}: kubeconfig server http://127.0.0.1:${port}/clusters/root:dep-ctrl is not https: refusing to send ` +
          "credentials that way (--allow-insecure-kcp for development only)\n",
      );
      assert.equal(connections, 0);
    });

    it(`${name}: insecure-skip-tls-verify is one line and exit 2, and nothing is sent`, async () => {
      connections = 0;
      const kc = kubeconfig(`https://127.0.0.1:${port}/clusters/root:dep-ctrl`, ", insecure-skip-tls-verify: true");
      const r = await runOnce(run, [`--kubeconfig=${kc}`, ...argv()]);
      assert.equal(r.code, 2);
      assert.match(r.err, new RegExp(`^${name}: kubeconfig cluster of .* sets insecure-skip-tls-verify: refusing`));
      assert.equal(r.err.split("\n").length, 2);
      assert.equal(connections, 0);
    });

    it(`${name}: --allow-insecure-kcp=true lets it try (and fail otherwise: nothing answers there)`, async () => {
      connections = 0;
      const kc = kubeconfig(`http://127.0.0.1:${port}/clusters/root:dep-ctrl`);
      const r = await runOnce(run, [`--kubeconfig=${kc}`, ...argv(), "--allow-insecure-kcp=true"]);
      assert.equal(r.code, 1, r.err);
      assert.ok(connections > 0, "it connected");
      assert.doesNotMatch(r.err, /refusing/);
    });

    it(`${name}: a usage error exits 2 too`, async () => {
      const r = await runOnce(run, ["--no-such-flag"]);
      assert.equal(r.code, 2);
      assert.match(r.err, /Unknown option '--no-such-flag'/);
    });
  }
});

describe("insecureTransport and loadKcpConnection", () => {
  it("says why a context would send its credentials unprotected", () => {
    const creds = { headers: () => Promise.resolve({}) };
    assert.equal(insecureTransport({ server: "https://kcp:6443", credentials: creds }), undefined);
    assert.match(insecureTransport({ server: "http://kcp:6443", credentials: creds }) ?? "", /is not https$/);
    assert.match(
      insecureTransport({ server: "https://kcp:6443", credentials: { ...creds, insecureSkipTLSVerify: true } }) ?? "",
      /sets insecure-skip-tls-verify$/,
    );
  });

  it("refuses only when asked to (the plugin and the test tools read kubeconfigs as kubectl does)", () => {
    const kc = kubeconfig("http://kcp:6443/clusters/root");
    assert.throws(() => loadKcpConnection({ kubeconfig: kc, requireSecure: true }), InsecureKcpError);
    const conn = loadKcpConnection({ kubeconfig: kc });
    assert.equal(conn.baseUrl, "http://kcp:6443");
    conn.base.close();
  });
});

describe("flags", () => {
  const env = { KUBECONFIG: "/kc" };

  it("the webhook refuses an http --kcp-base-url unless insecure is allowed", () => {
    assert.throws(() => parseWebhook(["--kcp-base-url=http://kcp:6443"], env), {
      name: "UsageError",
      message: '--kcp-base-url "http://kcp:6443" is not https (--allow-insecure-kcp=true for development only)',
    });
    const c = parseWebhook(["--kcp-base-url=http://kcp:6443", "--allow-insecure-kcp=true"], env);
    assert.ok(c !== "help" && c.allowInsecureKcp === true && c.kcpBaseUrl === "http://kcp:6443");
    const plain = parseWebhook(["--kcp-base-url=https://kcp:6443"], env);
    assert.ok(plain !== "help" && plain.allowInsecureKcp === undefined);
  });

  it("--allow-insecure-kcp reaches both configs, from the flag or its variable, and only a boolean", () => {
    const w = parseWebhook([], { ...env, ALLOW_INSECURE_KCP: "true" });
    assert.ok(w !== "help" && w.allowInsecureKcp === true);
    const c = parseController(["--webhook-url=https://wh", "--allow-insecure-kcp=true"], {});
    assert.ok(c !== "help" && c.allowInsecureKcp === true);
    const off = parseController(["--webhook-url=https://wh"], {});
    assert.ok(off !== "help" && off.allowInsecureKcp === undefined);
    assert.throws(() => parseController(["--webhook-url=https://wh", "--allow-insecure-kcp=maybe"], {}), {
      name: "UsageError",
      message: '--allow-insecure-kcp: want true or false, got "maybe"',
    });
  });

  it("--virtual-workspace-origins reaches the webhook's config as origins", () => {
    const c = parseWebhook(
      ["--virtual-workspace-origins= https://Shard-1.example:6444/ ,https://shard-2.example:443"],
      env,
    );
    assert.ok(c !== "help");
    assert.deepEqual(c.virtualWorkspaceOrigins, ["https://shard-1.example:6444", "https://shard-2.example"]);
    const fromEnv = parseWebhook([], { ...env, VIRTUAL_WORKSPACE_ORIGINS: "https://a.example:6444" });
    assert.ok(fromEnv !== "help");
    assert.deepEqual(fromEnv.virtualWorkspaceOrigins, ["https://a.example:6444"]);
    const none = parseWebhook([], env);
    assert.ok(none !== "help" && none.virtualWorkspaceOrigins === undefined);
    assert.throws(() => parseWebhook(["--virtual-workspace-origins=https://a.example:6444,http://b.example"], env), {
      name: "UsageError",
      message:
        '--virtual-workspace-origins: "http://b.example" is not an https origin (https://host[:port], no path, user or query)',
    });
  });
});
