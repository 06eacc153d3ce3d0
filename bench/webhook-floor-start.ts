// Starting the floor webhooks of `node bench/webhook-floor.ts`, each in a process of its own (so its CPU is its own):
// the Node one (webhook-floor-server.ts, forked with the webhook's V8 flags) and the Go one (webhook-floor-go/, built
// with the Go toolchain kcp is built with). Both serve `<dir>/tls.crt` and `tls.key` and report the same figures.
import { execFileSync, fork, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { NODE_FLAGS } from "../tools/kcp/binaries.ts";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import type { FloorCpu } from "./webhook-floor-server.ts";

export interface FloorServer {
  port: number;
  pid: number | undefined;
  cpu(): Promise<FloorCpu>;
  exit(): Promise<void>;
}

/** Forks the Node floor server: node:https, or (`h2`) node:http2 offering HTTP/2 and HTTP/1.1. */
export async function startFloorServer(dir: string, h2 = false): Promise<FloorServer> {
  const proc = fork(
    fileURLToPath(new URL("./webhook-floor-server.ts", import.meta.url)),
    [dir, ...(h2 ? ["h2"] : [])],
    {
      execArgv: [...process.execArgv, ...NODE_FLAGS],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    },
  );
  const next = <T>() => new Promise<T>((done) => proc.once("message", (m) => done(m as T)));
  const { port } = await next<{ port: number }>();
  return {
    port,
    pid: proc.pid,
    cpu: () => (proc.send("cpu"), next<FloorCpu>()),
    exit: () =>
      new Promise<void>((done) => {
        if (proc.exitCode !== null) return done();
        proc.once("exit", () => done());
        proc.send("exit");
      }),
  };
}

/**
 * Builds the Go floor server into `outDir` (`go` on the PATH; about a minute cold on 2 cores) and starts it, offering
 * HTTP/2 or (`http1Only`) HTTP/1.1 only.
 */
export async function startGoFloorServer(dir: string, outDir: string, http1Only = false): Promise<FloorServer> {
  const bin = join(outDir, "floor-go");
  execFileSync("go", ["build", "-o", bin, join(REPO_ROOT, "bench/webhook-floor-go/main.go")], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  const proc = spawn(bin, [dir, ...(http1Only ? ["h1"] : [])], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const line = await lines.next();
    if (line.done) throw new Error(`the Go floor server exited (code ${proc.exitCode})`);
    return JSON.parse(line.value) as T;
  };
  const { port } = await next<{ port: number }>();
  return {
    port,
    pid: proc.pid,
    cpu: () => (proc.stdin.write("cpu\n"), next<FloorCpu>()),
    exit: () =>
      new Promise<void>((done) => {
        if (proc.exitCode !== null) return done();
        proc.once("exit", () => done());
        proc.stdin.end();
      }),
  };
}
