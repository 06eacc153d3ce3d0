// `node bench/webhook-floor.ts` (under /work/bin/kcp-slot): what kcp v0.30.0 itself spends to call ANY validating
// webhook on a DELETE. One real kcp with the product's topology (bench/env.ts: the webhook and the controller as
// processes, the VM rule applied, so the controller writes its VWC in the network provider's workspace). The
// controller is then stopped, so that the bench alone decides which VWC exists, and sequential DELETEs of fresh VPCs
// in root:consumer1 (kcp-admin, as the latency bench) are timed in interleaved blocks under these conditions:
//   alone        no ValidatingWebhookConfiguration: kcp's own DELETE
//   floor        the VWC as the controller writes it (src/controller/desired.ts buildConfiguration: same rules,
//                failurePolicy, matchPolicy, timeout; the URL with the logical cluster), pointed at a bare node:https
//                server in a child process (webhook-floor-server.ts) with its own CA: kcp's cost of calling a webhook
//   webhook      the controller's own VWC, pointed at the real webhook (--lookup=index), as the bench runs it
//   floor-go     (only when named) the bare webhook in Go's net/http (webhook-floor-go/, built with `go`): kcp's share
//                with a leaner server. It offers HTTP/2, which kcp takes only for a loopback URL, as here
//   floor-go-h1  the same offering HTTP/1.1 only: the protocol kcp speaks to any other webhook URL
//   floor-h2     the Node floor on node:http2 (HTTP/2 offered, HTTP/1.1 beside it)
// The VWCs are written by kcp-admin: a platform measurement, not a tenant's. Blocks alternate alone, floor, webhook,
// webhook, floor, alone, ... so drift falls on all alike; each switch waits until a dry-run DELETE of the probe VPC
// (referenced by a VM) shows the new condition three times running. CPU per DELETE of kcp, the webhook and the floor
// server from /proc (10 ms ticks, summed over the DELETEs); the floor server's CPU per review from its own
// process.cpuUsage(). A benchmark: prints figures, asserts nothing.
//
//   --deletes=300 per condition   --block=50 DELETEs per block   --conditions=alone,floor,webhook (default)
//   --settle-ms=150 pause after each DELETE (the latency bench's default)   --binaries=src|dist (dist: `npm run build`)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { isApiError } from "../src/kcp/rest.ts";
import { makeCerts } from "../tools/kcp/certs.ts";
import { VPCS, at, tryDelete, vpc } from "../tools/kcp/objects.ts";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import { cpuMsOf } from "./machine.ts";
import { otherKcps } from "./notes.ts";
import { createAll, ensureNamespace } from "./populate.ts";
import { summarize } from "./stats.ts";
import { f, table, x } from "./table.ts";
import { startBench, stopBench, type BenchEnv } from "./env.ts";
import { startFloorServer, startGoFloorServer, type FloorServer } from "./webhook-floor-start.ts";
import {
  CONDITIONS,
  isFloor,
  schedule,
  switchTo,
  vwcsFor,
  type Condition,
  type Floors,
  type Vwcs,
} from "./webhook-floor-vwc.ts";

const { values } = parseArgs({
  options: {
    deletes: { type: "string", default: "300" },
    block: { type: "string", default: "50" },
    conditions: { type: "string", default: "alone,floor,webhook" },
    "settle-ms": { type: "string", default: "150" },
    binaries: { type: "string", default: "src" },
  },
});

const NS = "bench-floor";
const log = (line: string): void => void process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const uptime = (): string => execFileSync("uptime", { encoding: "utf8" }).trim();

/** What one condition gathered over its blocks. */
interface Tally {
  samples: number[];
  /** /proc CPU ms summed over the timed DELETEs. */
  kcpMs: number;
  webhookMs: number;
  floorMs: number;
  /** The floor server's own process.cpuUsage() over its blocks (µs), the reviews and new TLS connections it saw. */
  floorMicros: number;
  floorReviews: number;
  floorConnections: number;
  floorHttp2: number;
  errors: string[];
}

const tally = (): Tally => ({
  samples: [],
  kcpMs: 0,
  webhookMs: 0,
  floorMs: 0,
  floorMicros: 0,
  floorReviews: 0,
  floorConnections: 0,
  floorHttp2: 0,
  errors: [],
});

interface World {
  env: BenchEnv;
  floors: Floors;
  vwcs: Vwcs;
  current: Condition | undefined;
}

function cpuNow(w: World, floor: FloorServer | undefined) {
  return {
    kcp: cpuMsOf(w.env.kcp.process.pid),
    webhook: cpuMsOf(w.env.bins.webhook?.proc.pid),
    floor: floor ? cpuMsOf(floor.pid) : 0,
  };
}

const NO_FLOOR = { user: 0, system: 0, reviews: 0, http2: 0, connections: 0 };

/** One block: fresh VPCs, the condition in force, one untimed dry run (warms kcp's connection), timed DELETEs. */
async function runBlock(w: World, cond: Condition, tag: string, count: number, t: Tally): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `${tag}-${i}`);
  await createAll(
    w.env.consumer,
    names.map((n) => vpc(n, NS)),
  );
  if (w.current !== cond) {
    const ms = await switchTo(w.env, w.floors, w.vwcs, cond);
    log(`  switched to ${cond} in ${ms} ms`);
    w.current = cond;
  }
  const path = (name: string) => `${at(VPCS, NS)}/${name}`;
  await tryDelete(w.env.consumer, path(names[0] ?? ""), { dryRun: true });
  await sleep(Number(values["settle-ms"]));
  const floor = isFloor(cond) ? w.floors.get(cond) : undefined;
  const floorBefore = (await floor?.cpu()) ?? NO_FLOOR;
  for (const name of names) {
    const before = cpuNow(w, floor);
    const start = performance.now();
    const r = await tryDelete(w.env.consumer, path(name));
    t.samples.push(performance.now() - start);
    const after = cpuNow(w, floor);
    t.kcpMs += after.kcp - before.kcp;
    t.webhookMs += after.webhook - before.webhook;
    t.floorMs += after.floor - before.floor;
    if (!r.allowed) t.errors.push(`DELETE ${name}: ${r.status} ${r.message}`);
    await sleep(Number(values["settle-ms"]));
  }
  const floorAfter = (await floor?.cpu()) ?? NO_FLOOR;
  t.floorMicros += floorAfter.user + floorAfter.system - floorBefore.user - floorBefore.system;
  t.floorReviews += floorAfter.reviews - floorBefore.reviews;
  t.floorConnections += floorAfter.connections - floorBefore.connections;
  t.floorHttp2 += floorAfter.http2 - floorBefore.http2;
}

function report(conds: Condition[], tallies: Map<Condition, Tally>): string {
  const base = summarize(tallies.get("alone")?.samples ?? []);
  const rows = conds.map((c) => {
    const t = tallies.get(c) ?? tally();
    const s = summarize(t.samples);
    const n = s.n || NaN;
    return [
      c,
      String(s.n),
      f(s.p50, 2),
      f(s.p95, 2),
      f(s.mean, 2),
      `${x(s.p50 / base.p50)} / ${x(s.p95 / base.p95)} / ${x(s.mean / base.mean)}`,
      f(s.p50 - base.p50, 2),
      f(t.kcpMs / n, 2),
      f(t.webhookMs / n, 2),
      f(t.floorMs / n, 2),
      t.floorReviews ? f(t.floorMicros / t.floorReviews, 0) : "–",
      String(t.floorConnections),
      t.floorReviews ? `${t.floorHttp2 ? 2 : 1}${t.floorHttp2 % t.floorReviews ? " (mixed)" : ""}` : "–",
    ];
  });
  const headers = ["condition", "DELETEs", "p50 ms", "p95 ms", "mean ms", "÷ alone p50/p95/mean", "p50 − alone"];
  headers.push(
    "kcp CPU ms/DEL",
    "webhook CPU ms/DEL",
    "floor CPU ms/DEL",
    "floor µs/review",
    "floor new TLS conns",
    "HTTP/",
  );
  return table(headers, rows, 1);
}

async function measure(w: World, conds: Condition[]): Promise<Map<Condition, Tally>> {
  const tallies = new Map(conds.map((c) => [c, tally()]));
  const blocks = schedule(conds, Number(values.deletes), Number(values.block));
  for (const [i, b] of blocks.entries()) {
    log(`block ${i + 1}/${blocks.length}: ${b.condition}, ${b.count} DELETEs; load ${loadavg()[0]?.toFixed(1)}`);
    await runBlock(w, b.condition, `f${i}-${b.condition}`, b.count, tallies.get(b.condition) ?? tally());
  }
  return tallies;
}

/** The floor servers the conditions name, serving a throwaway CA's certificate from `dir` (made before kcp starts). */
async function startFloors(conds: Condition[], dir: string): Promise<Floors> {
  const floors: Floors = new Map();
  if (conds.includes("floor")) floors.set("floor", await startFloorServer(dir));
  if (conds.includes("floor-h2")) floors.set("floor-h2", await startFloorServer(dir, true));
  if (conds.includes("floor-go")) floors.set("floor-go", await startGoFloorServer(dir, dir));
  if (conds.includes("floor-go-h1")) floors.set("floor-go-h1", await startGoFloorServer(dir, dir, true));
  return floors;
}

function parseConditions(): Condition[] {
  const conds = values.conditions.split(",").filter(Boolean) as Condition[];
  const bad = conds.filter((c) => !CONDITIONS.includes(c));
  if (bad.length) throw new Error(`--conditions: unknown ${bad.join(", ")} (known: ${CONDITIONS.join(", ")})`);
  if (!conds.includes("alone")) throw new Error("--conditions must include alone: the ratios are against it");
  return conds;
}

async function run(env: BenchEnv, floors: Floors, ca: Buffer, conds: Condition[], uptimeStart: string): Promise<void> {
  const startedAt = new Date().toISOString();
  const vwcs = await vwcsFor(env, floors, ca);
  log("stopping the controller: from here the bench alone writes the VWC");
  await env.bins.controller?.proc.stop();
  await ensureNamespace(env.consumer, NS);
  const others = otherKcps(env.kcp.process.pid);
  const tallies = await measure({ env, floors, vwcs, current: undefined }, conds); // the first block switches
  const uptimeEnd = uptime();
  console.log(
    `kcp webhook floor, ${startedAt} → ${new Date().toISOString()}; ${others} other kcp server(s) running\n` +
      `load at start: ${uptimeStart}\nload at end:   ${uptimeEnd}\n` +
      `${values.deletes} DELETEs per condition in blocks of ${values.block}, settle ${values["settle-ms"]} ms; ` +
      `binaries from ${values.binaries}; CPU/DEL from /proc (10 ms ticks, summed)\n`,
  );
  console.log(report(conds, tallies));
  for (const [c, t] of tallies) for (const e of t.errors.slice(0, 5)) console.log(`error (${c}): ${e}`);
  const dir = join(REPO_ROOT, "bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `webhook-floor-${startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ startedAt, uptimeStart, uptimeEnd, others, values, tallies: [...tallies] }));
  log(`samples: ${file}`);
}

async function main(): Promise<void> {
  const conds = parseConditions();
  const certs = makeCerts(mkdtempSync(join(tmpdir(), "webhook-floor-")), { ips: ["127.0.0.1"] });
  const floors = await startFloors(conds, certs.dir);
  try {
    const uptimeStart = uptime();
    log(`start: ${uptimeStart}`);
    const env = await startBench(log, [], "index", values.binaries === "dist" ? "dist" : "src");
    try {
      await run(env, floors, readFileSync(certs.caCert), conds, uptimeStart);
    } finally {
      await stopBench(env).catch((err: unknown) => log(`stop: ${isApiError(err) ? err.message : String(err)}`));
    }
  } finally {
    for (const floor of floors.values()) await floor.exit();
    rmSync(certs.dir, { recursive: true, force: true });
  }
}

await main();
