// `node bench/review-cpu.ts`: the webhook's CPU per DELETE review, without kcp. The real server, handler, rule
// registry and index run in a child process (review-cpu-server.ts); this process plays kcp: N sequential
// AdmissionReviews over one keep-alive TLS connection, as kcp v0.30.0 sends them (kcp-review.ts: body, headers,
// query), for an allowed DELETE (a VPC nobody references) and a denied one (a VPC a VM references), and, with
// --floor, the same allowed review against a bare node:https server that answers a fixed reply (what TLS and HTTP
// alone cost).
// Prints the server's CPU per review (process.cpuUsage deltas / N, several runs: min / median / max), with --split
// divided into the decision (the handler, from its call to its answer) and the rest (TLS, HTTP, body, JSON, envelope,
// metrics, reply); the split's own process.cpuUsage() calls cost about 20 µs a review, so totals are read without it.
// "idle per 10 ms" is the server's CPU over 2 s with nothing arriving, per 10 ms: what a paced review's figure
// includes that is not the review's (timers, metrics, GC).
// A benchmark, not a test: nothing asserts a time.
//
//   --n=2000 reviews per run   --runs=5   --warmup=1000   --kinds=allowed,denied   --floor   --dependents=1   --split
//   --pace=MS        wait this long after each answer (default 0): at kcp's pace in the bench (a DELETE every 10 ms
//                    or so) the server runs colder code than back to back, and pays more per review
//   --against=DIR[,DIR...]  also run the server from other checkouts (e.g. main's, with this bench/ copied in), their
//                    runs interleaved with this tree's: before and after on the same machine at the same time
//   --each           also print every run's figure in order: with --warmup=0, how the cost falls as V8 tiers the
//                    code up (a fresh webhook serves its first few hundred reviews in baseline code)
//   --cpu-prof=DIR   a CPU profile of the server over the measured runs (not its startup or the warm-up), written to
//                    DIR as a .cpuprofile (read it with bench/cpu-profile.ts, or Chrome DevTools)
import { fork, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { NODE_FLAGS } from "../tools/kcp/binaries.ts";
import { KCP_HEADERS, KCP_QUERY, kcpReview } from "./kcp-review.ts";
import { FREE_VPC, PROVIDER, serve, USED_VPC, type ServerCpu } from "./review-cpu-server.ts";
import { table } from "./table.ts";

const { values } = parseArgs({
  options: {
    serve: { type: "string" },
    n: { type: "string", default: "2000" },
    runs: { type: "string", default: "5" },
    warmup: { type: "string", default: "1000" },
    kinds: { type: "string", default: "allowed,denied" },
    floor: { type: "boolean", default: false },
    dependents: { type: "string", default: "1" },
    split: { type: "boolean", default: false },
    pace: { type: "string", default: "0" },
    "cpu-prof": { type: "string" },
    against: { type: "string" },
    each: { type: "boolean", default: false },
  },
});

/** Milliseconds between reviews: 0 sends them back to back (hot code), about 10 is kcp's pace in the bench. */
const pace = Number(values.pace);

type Kind = "allowed" | "denied" | "floor";

interface Client {
  post(body: Buffer): Promise<number>;
  /** Sockets the agent has opened so far. */
  sockets(): number;
  close(): void;
}

function client(port: number, ca: Buffer): Client {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  const seen = new WeakSet<Socket>();
  let sockets = 0;
  const post = (body: Buffer) =>
    new Promise<number>((done, fail) => {
      const req = https.request(
        { host: "127.0.0.1", port, path: `/validate/${PROVIDER}${KCP_QUERY}`, method: "POST", ca, agent },
        (res) => {
          res.resume();
          res.on("end", () => done(res.statusCode ?? 0));
        },
      );
      for (const [name, value] of Object.entries(KCP_HEADERS)) req.setHeader(name, value);
      req.on("socket", (s: Socket) => void (seen.has(s) || (seen.add(s), sockets++)));
      req.on("error", fail);
      req.end(body);
    });
  return { post, sockets: () => sockets, close: () => agent.destroy() };
}

/** Starts a server child from `tree` (a checkout: its bench/review-cpu.ts and src/); `cpu()` asks it for its CPU. */
async function child(tree: string, dir: string, floor: boolean) {
  const prof = values["cpu-prof"];
  // The flags the webhook runs with (tools/kcp/binaries.ts, the image), source maps included.
  const execArgv = [...process.execArgv, "--enable-source-maps", ...NODE_FLAGS];
  const args = [`--serve=${dir}`, `--dependents=${values.dependents}`, ...(floor ? ["--floor"] : [])];
  if (values.split) args.push("--split");
  if (prof) args.push(`--cpu-prof=${resolve(prof)}`);
  // The server's log goes to /dev/null: written (and paid for) as in production, not read.
  const proc: ChildProcess = fork(join(tree, "bench/review-cpu.ts"), args, {
    execArgv,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const next = <T>() => new Promise<T>((done) => proc.once("message", (m) => done(m as T)));
  const { port } = await next<{ port: number }>();
  return {
    port,
    cpu: () => (proc.send("cpu"), next<ServerCpu>()),
    profile: (what: "start" | "stop") => (proc.send(`profile-${what}`), next<object>()),
    exit: () => new Promise<void>((done) => (proc.once("exit", () => done()), proc.send("exit"))),
  };
}

type Server = Awaited<ReturnType<typeof child>>;

interface Run {
  totalMicros: number;
  systemMicros: number;
  decisionMicros: number;
  /** Connections opened during the run: 0 when every review went over the one kept alive. */
  newSockets: number;
}

/** `n` sequential reviews of `kind`; the server's CPU over them, per review. */
async function run(c: Client, server: Server, kind: Kind, n: number, wait = pace): Promise<Run> {
  const name = kind === "denied" ? USED_VPC : FREE_VPC;
  // A uid as kcp's: a UUID.
  const bodies = Array.from({ length: n }, () => Buffer.from(JSON.stringify(kcpReview(randomUUID(), name))));
  // One review first, outside the count: the server closes a connection idle for 5 s (Node's keep-alive timeout),
  // as it may be while the other tree's runs go, and a new handshake is not what is measured.
  const prime = Buffer.from(JSON.stringify(kcpReview(randomUUID(), name)));
  await c.post(prime).catch(() => c.post(prime)); // the kept socket may have been closed just now
  const sockets = c.sockets();
  const before = await server.cpu();
  for (const body of bodies) {
    const code = await c.post(body);
    if (code !== 200) throw new Error(`review answered HTTP ${code}`);
    if (wait > 0) await delay(wait);
  }
  const after = await server.cpu();
  return {
    totalMicros: (after.user + after.system - before.user - before.system) / n,
    systemMicros: (after.system - before.system) / n,
    decisionMicros: (after.decisionMicros - before.decisionMicros) / n,
    newSockets: c.sockets() - sockets,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

/** The server's CPU while nothing arrives, per 10 ms (about kcp's pace in the bench): timers, metrics, GC. */
async function idleMicrosPer10ms(server: Server, ms = 2000): Promise<number> {
  const before = await server.cpu();
  await delay(ms);
  const after = await server.cpu();
  return ((after.user + after.system - before.user - before.system) * 10) / ms;
}

function row(kind: Kind, tree: string, runs: Run[], idle: number): string[] {
  const totals = runs.map((r) => r.totalMicros);
  const decision = values.split ? median(runs.map((r) => r.decisionMicros)) : NaN;
  const f = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : "–");
  const fields = [Math.min(...totals), median(totals), Math.max(...totals)].map(f).join(" / ");
  const system = f(median(runs.map((r) => r.systemMicros)));
  const split = kind === "floor" ? ["–", "–"] : [f(decision), f(median(totals) - decision)];
  const sockets = String(runs.reduce((a, r) => a + r.newSockets, 0));
  const each = values.each ? [totals.map(f).join(" ")] : [];
  return [kind, tree, fields, system, ...split, f(idle), sockets, ...each];
}

/**
 * Each kind against each tree: one server per tree, warmed up, then their runs interleaved (A, B, A, B, ...), so a
 * neighbour's load on a shared machine falls on both alike.
 */
async function measure(dir: string, ca: Buffer, kinds: Kind[], trees: string[]): Promise<string[][]> {
  const rows: string[][] = [];
  for (const kind of kinds) {
    const servers = await Promise.all(trees.map((t) => child(t, dir, kind === "floor")));
    const clients = servers.map((s) => client(s.port, ca));
    const runs = servers.map((): Run[] => []);
    for (const [i, s] of servers.entries()) await run(clients[i] as Client, s, kind, Number(values.warmup), 0);
    const idle: number[] = [];
    for (const s of servers) idle.push(await idleMicrosPer10ms(s));
    for (const s of servers) await s.profile("start");
    for (let r = 0; r < Number(values.runs); r++)
      for (const [i, s] of servers.entries()) runs[i]?.push(await run(clients[i] as Client, s, kind, Number(values.n)));
    for (const s of servers) await s.profile("stop");
    trees.forEach((t, i) => rows.push(row(kind, t, runs[i] ?? [], idle[i] ?? NaN)));
    for (const c of clients) c.close();
    for (const s of servers) await s.exit();
  }
  return rows;
}

if (values.serve) {
  const dependents = Number(values.dependents);
  await serve(values.serve, { floor: values.floor, dependents, split: values.split, profileDir: values["cpu-prof"] });
} else {
  const { makeCerts } = await import("../tools/kcp/certs.ts");
  const dir = mkdtempSync(join(tmpdir(), "review-cpu-"));
  const certs = makeCerts(dir, { ips: ["127.0.0.1"] });
  const kinds = [...(values.kinds.split(",").filter(Boolean) as Kind[]), ...(values.floor ? ["floor" as const] : [])];
  try {
    const self = resolve(fileURLToPath(import.meta.url), "../..");
    const trees = [...(values.against?.split(",").filter(Boolean) ?? []).map((t) => resolve(t)), self];
    const rows = await measure(certs.dir, readFileSync(certs.caCert), kinds, trees);
    console.log(
      `node ${process.version}; ${values.runs} runs of ${values.n} sequential reviews after ${values.warmup} ` +
        `warm-up; ${values.dependents} indexed dependent(s); server CPU per review in µs`,
    );
    const headers = [
      "review",
      "server from",
      "CPU min / median / max",
      "of it system",
      "decision",
      "rest",
      "idle per 10 ms",
      "new sockets",
      ...(values.each ? ["each run, in order"] : []),
    ];
    console.log(table(headers, rows));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
