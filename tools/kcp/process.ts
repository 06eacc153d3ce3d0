// Child processes started by tests: each in its own process group, tracked so that a failing test, an uncaught
// error or Ctrl-C never leaves a kcp, front-proxy or cache-server running.
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createWriteStream, readFileSync, rmSync, existsSync } from "node:fs";
import net from "node:net";

const live = new Set<ManagedProcess>();
const cleanupDirs = new Set<string>();
let hooksInstalled = false;

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const killAll = (): void => {
    for (const p of live) p.killGroup("SIGKILL");
    for (const dir of cleanupDirs) rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", killAll);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      // A program that handles the signal itself (the demo) cleans up in order; the exit hook still backs it up.
      if (process.listenerCount(sig) > 0) return;
      killAll();
      process.exit(130);
    });
  }
}

/** Removes `dir` when the process exits, even if a test never reached its own cleanup. */
export function removeOnExit(dir: string): void {
  installExitHooks();
  cleanupDirs.add(dir);
}

export function forgetDir(dir: string): void {
  cleanupDirs.delete(dir);
}

export class ManagedProcess {
  readonly child: ChildProcess;
  readonly logFile: string;
  private exited: Promise<number | null>;
  exitCode: number | null | undefined = undefined;

  constructor(command: string, args: string[], logFile: string, opts: SpawnOptions = {}) {
    installExitHooks();
    this.logFile = logFile;
    const log = createWriteStream(logFile, { flags: "a" });
    // detached: its own process group, so the whole tree (sharded-test-server's children too) can be signalled.
    this.child = spawn(command, args, { ...opts, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout?.pipe(log);
    this.child.stderr?.pipe(log);
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code) => {
        this.exitCode = code;
        live.delete(this);
        resolve(code);
      });
      this.child.once("error", (err) => {
        log.write(`spawn error: ${err.message}\n`);
        this.exitCode = -1;
        live.delete(this);
        resolve(-1);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  killGroup(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // already gone
    }
  }

  /** SIGTERM to the group, SIGKILL after `graceMs`, and wait for the exit. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) {
      this.killGroup("SIGKILL"); // children of an exited leader may still be around
      return;
    }
    this.killGroup("SIGTERM");
    const timer = setTimeout(() => this.killGroup("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
    this.killGroup("SIGKILL");
  }

  wait(): Promise<number | null> {
    return this.exited;
  }

  logTail(lines = 60): string {
    if (!existsSync(this.logFile)) return "(no log)";
    const all = readFileSync(this.logFile, "utf8").split("\n");
    return all.slice(-lines).join("\n");
  }
}

/** Pids of processes started by this module that are still alive (for the cleanup test). */
export function livePids(): number[] {
  return [...live].map((p) => p.pid).filter((p): p is number => p !== undefined);
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastErr instanceof Error ? `: ${lastErr.message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250));
  }
}
