// A real multi-shard kcp: kcp's own sharded-test-server with 2 shards, a cache server and the front-proxy.
// It uses fixed ports (front-proxy 6443, shards 6444/6445, cache 8012, etcd 2379+), so only one runs per machine at
// a time: a lock directory serialises test files that need it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, afterEach, before } from "node:test";
import { loadKcpConnection } from "../../src/kcp/kubeconfig.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { writeKubeconfig } from "./api.ts";
import { kcpBinDir, type TokenUser } from "./harness.ts";
import { ManagedProcess, forgetDir, removeOnExit, waitFor } from "./process.ts";

const LOCK_DIR = path.join(os.tmpdir(), "kcp-dependency-controller-sharded.lock");

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function takeLock(): Promise<void> {
  await waitFor(
    "the sharded kcp lock (another sharded test is running)",
    async () => {
      try {
        mkdirSync(LOCK_DIR);
        writeFileSync(path.join(LOCK_DIR, "pid"), String(process.pid));
        return true;
      } catch {
        const holder = Number(readFileSync(path.join(LOCK_DIR, "pid"), "utf8").trim() || "0");
        if (holder && !pidAlive(holder)) rmSync(LOCK_DIR, { recursive: true, force: true }); // stale
        return undefined;
      }
    },
    { timeoutMs: 20 * 60_000, intervalMs: 1000 },
  );
}

function releaseLock(): void {
  rmSync(LOCK_DIR, { recursive: true, force: true });
}

export class ShardedKcp {
  readonly rootDir: string;
  readonly baseUrl: string;
  readonly process: ManagedProcess;
  /** kcp-admin through the front-proxy. */
  readonly admin: RestClient;
  /** system:masters on each shard directly (index 0 = root shard). */
  readonly shardAdmins: RestClient[];
  readonly caPem: string;
  readonly shardNames = ["root", "shard-1"];

  constructor(rootDir: string, proc: ManagedProcess) {
    this.rootDir = rootDir;
    this.process = proc;
    const conn = loadKcpConnection({ kubeconfig: path.join(rootDir, ".kcp/admin.kubeconfig"), context: "base" });
    this.baseUrl = conn.baseUrl;
    this.admin = conn.base;
    this.shardAdmins = [0, 1].map(
      (n) =>
        loadKcpConnection({ kubeconfig: path.join(rootDir, `.kcp-${n}/admin.kubeconfig`), context: "shard-base" }).base,
    );
    const kc = readFileSync(path.join(rootDir, ".kcp/admin.kubeconfig"), "utf8");
    const ca = /certificate-authority-data:\s*(\S+)/.exec(kc)?.[1] ?? "";
    this.caPem = Buffer.from(ca, "base64").toString("utf8");
  }

  ws(workspace: string): RestClient {
    return this.admin.forCluster(workspace);
  }

  kubeconfigFor(
    token: string,
    workspace: string,
    file = `kubeconfig-${workspace.replace(/:/g, "_")}-${token}`,
  ): string {
    return writeKubeconfig(path.join(this.rootDir, file), `${this.baseUrl}/clusters/${workspace}`, this.caPem, {
      token,
    });
  }

  logTail(lines = 40): string {
    return ["kcp-0", "kcp-1", "kcp-front-proxy", "cache-server"]
      .map((n) => path.join(this.rootDir, `${n}.log`))
      .filter((f) => existsSync(f))
      .map((f) => `--- ${path.basename(f)} ---\n${readFileSync(f, "utf8").split("\n").slice(-lines).join("\n")}`)
      .concat(`--- sharded-test-server ---\n${this.process.logTail(lines)}`)
      .join("\n");
  }

  async stop(): Promise<void> {
    await this.process.stop(15_000);
    rmSync(this.rootDir, { recursive: true, force: true });
    forgetDir(this.rootDir);
    releaseLock();
  }
}

export async function startShardedKcp(
  opts: { tokens?: TokenUser[]; startTimeoutMs?: number } = {},
): Promise<ShardedKcp> {
  const bin = kcpBinDir();
  await takeLock();
  const dir = mkdtempSync(path.join(os.tmpdir(), "kcp-depctrl-sharded-"));
  removeOnExit(dir);
  // sharded-test-server looks upward from its working directory for a `.git` and reads the token file kcp's e2e
  // framework keeps at test/e2e/framework/auth-tokens.csv there; give it both.
  mkdirSync(path.join(dir, ".git"));
  mkdirSync(path.join(dir, "test/e2e/framework"), { recursive: true });
  const tokens = opts.tokens ?? [];
  writeFileSync(
    path.join(dir, "test/e2e/framework/auth-tokens.csv"),
    tokens.map((t) => `${t.token},${t.user},${t.user},"${(t.groups ?? []).join(",")}"`).join("\n") + "\n",
  );
  const proc = new ManagedProcess(
    path.join(bin, "sharded-test-server"),
    ["--number-of-shards=2", `--work-dir-path=${dir}`, `--log-dir-path=${dir}`],
    path.join(dir, "sharded-test-server.log"),
    { cwd: dir, env: { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}`, NO_GORUN: "1" } },
  );
  try {
    await waitFor(
      "sharded kcp ready-to-test",
      async () => {
        if (!proc.running) throw new Error(`sharded-test-server exited with code ${proc.exitCode}`);
        return existsSync(path.join(dir, ".kcp/ready-to-test")) || undefined;
      },
      { timeoutMs: opts.startTimeoutMs ?? 240_000, intervalMs: 500 },
    );
  } catch (err) {
    const tail = proc.logTail(60);
    await proc.stop(15_000);
    rmSync(dir, { recursive: true, force: true });
    releaseLock();
    throw new Error(`${(err as Error).message}\n--- sharded-test-server log tail ---\n${tail}`);
  }
  return new ShardedKcp(dir, proc);
}

/** One sharded kcp per test file, like kcpSuite. */
export function shardedKcpSuite(opts: { tokens?: TokenUser[] } = {}): { readonly kcp: ShardedKcp } {
  let kcp: ShardedKcp | undefined;
  let failed = false;
  before(async () => {
    kcp = await startShardedKcp(opts);
  });
  afterEach((t) => {
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (!kcp) return;
    if (failed) process.stderr.write(`\n--- sharded kcp logs (${kcp.rootDir}) ---\n${kcp.logTail()}\n`);
    await kcp.stop();
  });
  return {
    get kcp(): ShardedKcp {
      if (!kcp) throw new Error("sharded kcp is not running (did the suite's before hook fail?)");
      return kcp;
    },
  };
}
