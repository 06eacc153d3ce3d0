// `node bench/local-targets-heap.ts --consumers=1000`: what the controller's local-target passes hold in memory per
// consumer workspace, in process, without kcp. The controller's real LocalTargets (local-targets-sync.ts) with the
// real RestClient and the real local-target watches (local-targets-watch.ts) run against a stand-in of one dependent
// export's virtual workspace over HTTPS, served by a child process (so its memory is not counted): N consumer
// bindings shaped and sized as kcp v0.30.0 answers them (metadata.managedFields, status conditions), and the
// configurations the controller writes, stored as kcp stores them (bench/local-targets-kcp.ts's rules; 403 where
// a consumer declined). Each size runs in a fresh process; per size: V8 heap and external memory after forced
// collections (what is held) and the peak sampled during the passes, RSS, and the process's max RSS. The difference
// between N and 0 consumers, divided by N, is the per-consumer cost. A benchmark: nothing asserts.
//
//   --consumers=1000   --declined=10   --passes=4 (the first writes, the rest are steady)   --sizes=0,N (default)
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pino from "pino";
import { Registry } from "prom-client";
import { LocalTargets } from "../src/controller/local-targets-sync.ts";
import { localTargetWatchesOf } from "../src/controller/local-targets-watch.ts";
import { createMetrics } from "../src/controller/metrics.ts";
import { RestClient } from "../src/kcp/rest.ts";
import { makeCerts } from "../tools/kcp/certs.ts";
import { CA, flags, RULES, serve, WEBHOOK, type Options } from "./local-targets-heap-kcp.ts";

interface Memory {
  heap: number;
  external: number;
  rss: number;
}

function sample(): Memory {
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, rss: m.rss };
}

function collected(): Memory {
  const gc = (globalThis as { gc?: () => void }).gc!;
  for (let i = 0; i < 4; i++) gc();
  return sample();
}

/** The passes in this process against a stand-in with `consumers` consumers; the figures as one JSON line. */
async function probe(o: Options): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "lt-heap-"));
  const certs = makeCerts(dir, { ips: ["127.0.0.1"] });
  const child = spawn(process.execPath, [
    fileURLToPath(import.meta.url),
    "--serve",
    ...flags(o),
    `--certs=${certs.dir}`,
  ]);
  const port = await new Promise<number>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(Number(d))));
  const logger = pino({ level: "info" }, pino.destination({ dest: "/dev/null", sync: true }));
  const root = new RestClient(`https://127.0.0.1:${port}`, {
    ca: readFileSync(certs.caCert),
    headers: () => Promise.resolve({ authorization: "Bearer probe" }),
  });
  let events = 0;
  const watches = localTargetWatchesOf({ client: root, logger, onChange: () => events++ });
  const metrics = createMetrics(new Registry());
  const lt = new LocalTargets({
    endpoints: () => [`${root.baseUrl}/services/apiexport/root/dep-ctrl`],
    clientFor: (endpoint, cluster) => root.withBase(`${endpoint}/clusters/${cluster}`),
    webhookBaseUrl: WEBHOOK,
    mayWrite: () => true,
    localTargetWatches: watches,
    logger,
    metrics,
  });
  const rules = RULES.map((parsed) => ({ parsed }));
  const before = collected();
  let peak = before;
  const timer = setInterval(() => {
    const s = sample();
    if (s.heap + s.external > peak.heap + peak.external) peak = s;
  }, 5);
  const writes: number[] = [];
  for (let p = 0; p < o.passes; p++) {
    await lt.sync({ rules, caBundle: CA }, () => false);
    writes.push((await metrics.writes.get()).values.reduce((n, v) => n + v.value, 0));
  }
  clearInterval(timer);
  const after = collected();
  const line = {
    consumers: o.consumers,
    installed: o.installed,
    before,
    after,
    peak,
    maxRssKiB: process.resourceUsage().maxRSS,
    writes,
  };
  process.stdout.write(`${JSON.stringify({ ...line, watches: watches.count(), events })}\n`);
  watches.stop();
  root.close();
  child.kill();
  rmSync(dir, { recursive: true, force: true });
}

interface Row {
  consumers: number;
  installed: boolean;
  before: Memory;
  after: Memory;
  peak: Memory;
  maxRssKiB: number;
  writes: number[];
  watches: number;
}

function print(rows: Row[]): void {
  const mib = (b: number) => (b / 2 ** 20).toFixed(1).padStart(7);
  console.log(
    "passes              consumers  held: heap  external   peak: heap  external      rss  max RSS  writes (cumulative)",
  );
  for (const r of rows)
    console.log(
      `${(r.installed ? "steady (installed)" : "first pass writes").padEnd(18)}  ${String(r.consumers).padStart(9)}  ` +
        `${mib(r.after.heap)}  ${mib(r.after.external)}   ${mib(r.peak.heap)}  ${mib(r.peak.external)}  ` +
        `${mib(r.peak.rss)}  ${mib(r.maxRssKiB * 1024)}  ${r.writes.join("/")}`,
    );
  for (const installed of [true, false]) {
    const same = rows.filter((r) => r.installed === installed);
    const [a, b] = [same[0], same.at(-1)];
    if (!a || !b || a === b) continue;
    const per = (x: number, y: number) => `${((y - x) / (b.consumers - a.consumers) / 1024).toFixed(1)} KiB`;
    console.log(
      `per consumer, ${installed ? "steady" : "first pass"}: held heap ${per(a.after.heap, b.after.heap)}, ` +
        `external ${per(a.after.external, b.after.external)}; ` +
        `peak heap+external ${per(a.peak.heap + a.peak.external, b.peak.heap + b.peak.external)}; ` +
        `max RSS ${per(a.maxRssKiB * 1024, b.maxRssKiB * 1024)}`,
    );
  }
}

const { values } = parseArgs({
  options: {
    serve: { type: "boolean", default: false },
    probe: { type: "boolean", default: false },
    installed: { type: "boolean", default: false },
    certs: { type: "string" },
    consumers: { type: "string", default: "1000" },
    declined: { type: "string", default: "10" },
    passes: { type: "string", default: "4" },
    sizes: { type: "string" },
  },
});
const opts: Options = {
  consumers: Number(values.consumers),
  declined: Number(values.declined),
  passes: Number(values.passes),
  installed: values.installed,
};
if (values.serve) serve(opts, values.certs!);
else if (values.probe) await probe(opts);
else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sizes = (values.sizes ?? `0,${opts.consumers}`).split(",").map(Number);
  console.log(`node ${process.version}, ${opts.passes} passes per row, ${opts.declined} declined`);
  const rows = [true, false].flatMap((installed) =>
    sizes.map((n) => {
      const o = { ...opts, consumers: n, declined: n === 0 ? 0 : opts.declined, installed };
      const out = execFileSync(process.execPath, [
        "--expose-gc",
        fileURLToPath(import.meta.url),
        "--probe",
        ...flags(o),
      ]);
      return JSON.parse(out.toString().trim().split("\n").at(-1)!) as Row;
    }),
  );
  print(rows);
}
