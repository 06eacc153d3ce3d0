// A real multi-shard kcp: kcp's own sharded-test-server with 2 shards, a cache server and the front-proxy.
// It uses fixed ports (front-proxy 6443, shards 6444/6445, cache 8012, etcd 2379+), so only one runs per machine at
// a time: a lock directory serialises test files that need it.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadKcpConnection } from "../../src/kcp/kubeconfig.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { KcpBase, kcpBinDir, suiteOf, type TokenUser } from "./harness.ts";
import { ManagedProcess, forgetDir, pidAlive, removeOnExit, waitFor } from "./process.ts";

const LOCK_DIR = path.join(os.tmpdir(), "kcp-dependency-controller-sharded.lock");

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

export class ShardedKcp extends KcpBase {
  readonly process: ManagedProcess;
  readonly shardAdmins: RestClient[];
  readonly shardNames = ["root", "shard-1"];

  constructor(rootDir: string, proc: ManagedProcess) {
    const adminKubeconfig = path.join(rootDir, ".kcp/admin.kubeconfig");
    const conn = loadKcpConnection({ kubeconfig: adminKubeconfig, context: "base" });
    const ca = /certificate-authority-data:\s*(\S+)/.exec(readFileSync(adminKubeconfig, "utf8"))?.[1] ?? "";
    super(rootDir, conn.baseUrl, conn.base, Buffer.from(ca, "base64").toString("utf8"));
    this.process = proc;
    this.shardAdmins = [0, 1].map(
      (n) =>
        loadKcpConnection({ kubeconfig: path.join(rootDir, `.kcp-${n}/admin.kubeconfig`), context: "shard-base" }).base,
    );
  }

  /** The pid of shard `n`'s kcp process (sharded-test-server starts it with --root-directory=<work dir>/.kcp-<n>). */
  shardPid(n: number): number {
    const flag = `--root-directory=${path.join(this.rootDir, `.kcp-${n}`)}`;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let argv: string[];
      try {
        argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      } catch {
        continue; // gone meanwhile
      }
      if (path.basename(argv[0] ?? "") === "kcp" && argv.includes(flag)) return Number(entry);
    }
    throw new Error(`no kcp process with ${flag}`);
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
  return suiteOf(() => startShardedKcp(opts));
}
