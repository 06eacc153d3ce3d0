// Starts a real single-shard kcp v0.30.0 for a test file: fresh temp root dir, loopback, free ports, waits for
// /readyz to answer exactly "ok", hands out admin clients, and tears everything down afterwards.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { after, afterEach, before } from "node:test";
import { fileURLToPath } from "node:url";
import { KubeConfig } from "@kubernetes/client-node";
import { loadKcpConnection } from "../../src/kcp/kubeconfig.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { ManagedProcess, forgetDir, freePort, removeOnExit, waitFor } from "./process.ts";
import { writeKubeconfig } from "./api.ts";
import { writeWebhookClientConfig } from "./webhook-client-config.ts";

export { writeWebhookClientConfig };

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

let binDir: string | undefined;

/** Directory with kcp's binaries: $KCP_BIN_DIR, or built (once, then cached) by hack/kcp/build.sh. */
export function kcpBinDir(): string {
  if (binDir) return binDir;
  const out = execFileSync("bash", [path.join(REPO_ROOT, "hack/kcp/build.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  binDir = out.trim().split("\n").at(-1) ?? "";
  return binDir;
}

export interface TokenUser {
  token: string;
  user: string;
  groups?: string[];
}

export interface StartOptions {
  /** Static-token identities (kcp --token-auth-file), e.g. one each for the controller and the webhook. */
  tokens?: TokenUser[];
  /** Extra `kcp start` flags. */
  extraArgs?: string[];
  startTimeoutMs?: number;
  /**
   * The client certificate kcp presents to webhooks at `hosts` (`host:port` as in the webhook URL, or `*`): written
   * into the root directory as a WebhookAdmissionConfiguration kubeconfig for the `apis.kcp.io/ValidatingWebhook`
   * plugin and passed with --admission-control-config-file (how kcp's docs give webhooks a client certificate).
   * kcp v0.30.0 refuses that flag (it is in its disallowedFlags: "unknown flag"), so with v0.30.0 this option makes
   * kcp fail to start; see test/integration/webhook-auth.test.ts and docs/operations.md, "Threat model".
   */
  webhookClientCert?: { certFile: string; keyFile: string; hosts: string[] };
}

/** What every kcp the tests start offers: admin clients, the serving CA, kubeconfigs for token users. */
export abstract class KcpBase {
  readonly rootDir: string;
  readonly baseUrl: string;
  /** kcp-admin (subject to kcp's authorization) at the base URL; aim with `.forCluster(path)`. */
  readonly admin: RestClient;
  readonly caPem: string;
  /** system:masters on each shard directly (index 0 = root shard). */
  abstract readonly shardAdmins: RestClient[];

  constructor(rootDir: string, baseUrl: string, admin: RestClient, caPem: string) {
    this.rootDir = rootDir;
    this.baseUrl = baseUrl;
    this.admin = admin;
    this.caPem = caPem;
  }

  /** kcp-admin client rooted at a workspace (`root:org`) or logical cluster. */
  ws(workspace: string): RestClient {
    return this.admin.forCluster(workspace);
  }

  /** Writes a kubeconfig for a token user pointing at `<base>/clusters/<workspace>` and returns its path. */
  kubeconfigFor(
    token: string,
    workspace: string,
    file = `kubeconfig-${workspace.replace(/:/g, "_")}-${token}`,
  ): string {
    return writeKubeconfig(path.join(this.rootDir, file), `${this.baseUrl}/clusters/${workspace}`, this.caPem, {
      token,
    });
  }
}

export class Kcp extends KcpBase {
  readonly adminKubeconfig: string;
  readonly process: ManagedProcess;
  /** shard-admin (system:masters) at the base URL: the only one that may write `system:admin`. */
  readonly shardAdmin: RestClient;

  constructor(rootDir: string, baseUrl: string, proc: ManagedProcess) {
    const adminKubeconfig = path.join(rootDir, "admin.kubeconfig");
    super(
      rootDir,
      baseUrl,
      loadKcpConnection({ kubeconfig: adminKubeconfig, context: "base" }).base,
      readFileSync(path.join(rootDir, "apiserver.crt"), "utf8"),
    );
    this.adminKubeconfig = adminKubeconfig;
    this.process = proc;
    this.shardAdmin = loadKcpConnection({ kubeconfig: adminKubeconfig, context: "shard-base" }).base;
  }

  get shardAdmins(): RestClient[] {
    return [this.shardAdmin];
  }

  logTail(lines = 60): string {
    return this.process.logTail(lines);
  }

  async stop(): Promise<void> {
    await this.process.stop();
    rmSync(this.rootDir, { recursive: true, force: true });
    forgetDir(this.rootDir);
  }
}

async function readyzOk(baseUrl: string, ca: Buffer | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      `${baseUrl}/readyz`,
      { ...(ca ? { ca } : { rejectUnauthorized: false }), timeout: 2000 },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        // During start /readyz answers a multi-line report; only the exact body "ok" means ready.
        res.on("end", () => resolve(res.statusCode === 200 && body === "ok"));
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

export async function startKcp(opts: StartOptions = {}): Promise<Kcp> {
  const bin = kcpBinDir();
  const rootDir = mkdtempSync(path.join(os.tmpdir(), "kcp-depctrl-"));
  removeOnExit(rootDir);
  const [securePort, etcdClient, etcdPeer] = [await freePort(), await freePort(), await freePort()];
  const args = [
    "start",
    `--root-directory=${rootDir}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${securePort}`,
    `--embedded-etcd-client-port=${etcdClient}`,
    `--embedded-etcd-peer-port=${etcdPeer}`,
    "--embedded-etcd-wal-size-bytes=5000",
    ...(opts.extraArgs ?? []),
  ];
  if (opts.tokens?.length) {
    const file = path.join(rootDir, "tokens.csv");
    writeFileSync(
      file,
      opts.tokens.map((t) => `${t.token},${t.user},${t.user},"${(t.groups ?? []).join(",")}"`).join("\n") + "\n",
    );
    args.push(`--token-auth-file=${file}`);
  }
  if (opts.webhookClientCert) {
    args.push(`--admission-control-config-file=${writeWebhookClientConfig(rootDir, opts.webhookClientCert)}`);
  }
  const proc = new ManagedProcess(path.join(bin, "kcp"), args, path.join(rootDir, "kcp.log"), {
    cwd: rootDir,
    env: { ...process.env, UNSAFE_E2E_HACK_DISABLE_ETCD_FSYNC: "true" },
  });
  const baseUrl = `https://127.0.0.1:${securePort}`;
  try {
    await waitFor(
      "kcp /readyz = ok",
      async () => {
        if (!proc.running) throw new Error(`kcp exited with code ${proc.exitCode}`);
        const crt = path.join(rootDir, "apiserver.crt");
        return (await readyzOk(baseUrl, existsSync(crt) ? readFileSync(crt) : undefined)) || undefined;
      },
      { timeoutMs: opts.startTimeoutMs ?? 120_000, intervalMs: 250 },
    );
    await waitFor("admin.kubeconfig", async () => existsSync(path.join(rootDir, "admin.kubeconfig")) || undefined);
  } catch (err) {
    const tail = proc.logTail(40);
    await proc.stop();
    rmSync(rootDir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\n--- kcp log tail ---\n${tail}`);
  }
  return new Kcp(rootDir, baseUrl, proc);
}

/** Reads a context's credentials from a kubeconfig (used to mint kubeconfigs for other identities). */
export function kubeconfigContext(file: string, context: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  kc.setCurrentContext(context);
  return kc;
}

/** What a per-file suite needs of a running kcp (single shard or sharded). */
export interface Stoppable {
  readonly rootDir: string;
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

/**
 * One kcp per test file: `const env = suiteOf(() => startKcp()); … env.kcp`. Starts it before the first test,
 * prints its log tail if any test failed, and stops it and removes its directory after the last one.
 */
export function suiteOf<K extends Stoppable>(start: () => Promise<K>): { readonly kcp: K } {
  let kcp: K | undefined;
  let failed = false;
  before(async () => {
    kcp = await start();
  });
  afterEach((t) => {
    // TestContext.passed exists at run time (Node >= 21) but not yet in @types/node 24.
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (!kcp) return;
    if (failed) process.stderr.write(`\n--- kcp logs (${kcp.rootDir}) ---\n${kcp.logTail()}\n`);
    await kcp.stop();
  });
  return {
    get kcp(): K {
      if (!kcp) throw new Error("kcp is not running (did the suite's before hook fail?)");
      return kcp;
    },
  };
}

/** One single-shard kcp per test file. */
export function kcpSuite(opts: StartOptions = {}): { readonly kcp: Kcp } {
  return suiteOf(() => startKcp(opts));
}
