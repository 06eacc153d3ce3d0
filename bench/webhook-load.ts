// `node bench/webhook-load.ts`: the webhook's HTTPS server under a flood of large forged reviews, while genuine small
// reviews keep arriving. The server runs in a child process (its handler decides in about 5 ms, like a lookup), so
// its peak RSS is its own; the flood runs in a second child, so its CPU does not slow the genuine client's clock
// (the machine's cores are still shared). Prints the peak RSS, and how the genuine reviews fared (decided, refused with 429, p50/p99
// latency). A benchmark, not a test: nothing asserts a time.
//
//   --flood=200          concurrent large reviews, re-sent as each one is answered, for the whole run
//   --flood-bytes=3145728  size of each (3 MiB: over the 2 MiB limit, refused unread; try 2000000 to get them parsed)
//   --genuine=8          genuine reviews in flight, one after another, for the whole run     --seconds=15   run length
import { fork } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { summarize } from "./stats.ts";

const { values } = parseArgs({
  options: {
    serve: { type: "string" },
    flood: { type: "string", default: "200" },
    "flood-bytes": { type: "string", default: String(3 * 1024 * 1024) },
    genuine: { type: "string", default: "8" },
    seconds: { type: "string", default: "15" },
    "flood-port": { type: "string" },
    "flood-ca": { type: "string" },
  },
});

if (values.serve) {
  // The child: the real server with a handler that takes ~5 ms; reports its port, then its peak RSS on request.
  const dir = values.serve;
  const { Registry } = await import("prom-client");
  const { silentLogger } = await import("../src/observability/logger.ts");
  const { deny } = await import("../src/webhook/admission.ts");
  const { createWebhookMetrics } = await import("../src/webhook/metrics.ts");
  const { startWebhookServer } = await import("../src/webhook/http/server.ts");
  const server = await startWebhookServer({
    host: "127.0.0.1",
    port: 0,
    tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
    handler: () =>
      new Promise((resolve) => setTimeout(() => resolve(deny("referenced", 409, "Conflict", "still referenced")), 5)),
    logger: process.env["LOAD_DEBUG"]
      ? (await import("pino")).pino({ level: "debug" }, process.stderr)
      : silentLogger(),
    metrics: createWebhookMetrics(new Registry()),
  });
  process.send?.({ port: server.port });
  process.on("message", () => {
    const status = readFileSync("/proc/self/status", "utf8");
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    process.send?.({ peakRssMiB: Number(hwm) / 1024 });
  });
} else if (values["flood-port"]) {
  // The flood, in its own process so its CPU does not slow the genuine client's clock.
  const port = Number(values["flood-port"]);
  const ca = readFileSync(values["flood-ca"] ?? "");
  const agent = new https.Agent({ keepAlive: true, maxSockets: Number(values.flood) });
  const big = forged(Number(values["flood-bytes"]));
  let flooding = true;
  const codes: Record<string, number> = {};
  process.on("message", () => (flooding = false));
  const flooders = Array.from({ length: Number(values.flood) }, async () => {
    while (flooding) {
      const { code } = await post(port, ca, big, agent);
      codes[code] = (codes[code] ?? 0) + 1;
    }
  });
  process.send?.({ started: true });
  await Promise.all(flooders);
  agent.destroy();
  process.send?.({ codes, bytes: big.length });
} else {
  const { makeCerts } = await import("../tools/kcp/certs.ts");
  const dir = mkdtempSync(join(tmpdir(), "webhook-load-"));
  const certs = makeCerts(dir);
  const ca = readFileSync(certs.caCert);
  const self = fileURLToPath(import.meta.url);
  const server = fork(self, [`--serve=${dir}`], { stdio: "inherit" });
  const port = await new Promise<number>((resolve) =>
    server.once("message", (m) => resolve((m as { port: number }).port)),
  );
  const flood = fork(
    self,
    [
      `--flood-port=${port}`,
      `--flood-ca=${certs.caCert}`,
      `--flood=${values.flood}`,
      `--flood-bytes=${values["flood-bytes"]}`,
    ],
    { stdio: "inherit" },
  );
  await new Promise((resolve) => flood.once("message", resolve));
  const until = performance.now() + Number(values.seconds) * 1000;

  const genuine = Buffer.from(
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "genuine",
        operation: "DELETE",
        resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
        name: "my-vpc",
        oldObject: { metadata: { name: "my-vpc", annotations: { "kcp.io/cluster": "c1" } } },
      },
    }),
  );
  const agent = new https.Agent({ keepAlive: true, maxSockets: Number(values.genuine) });
  const latencies: number[] = [];
  const codes = new Map<number, number>();
  const samples = new Map<number, string>();
  await Promise.all(
    Array.from({ length: Number(values.genuine) }, async () => {
      while (performance.now() < until) {
        const start = performance.now();
        const { code, text } = await post(port, ca, genuine, agent);
        latencies.push(performance.now() - start);
        codes.set(code, (codes.get(code) ?? 0) + 1);
        if (!samples.has(code)) samples.set(code, text.slice(0, 200));
      }
    }),
  );
  const floodDone = new Promise<{ codes: Record<string, number>; bytes: number }>((resolve) =>
    flood.once("message", (m) => resolve(m as { codes: Record<string, number>; bytes: number })),
  );
  flood.send("stop");
  const floodResult = await floodDone;
  server.send("rss");
  const { peakRssMiB } = await new Promise<{ peakRssMiB: number }>((resolve) =>
    server.once("message", (m) => resolve(m as { peakRssMiB: number })),
  );
  server.kill();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });

  const s = summarize(latencies);
  const fmt = (entries: [string | number, number][]) => entries.map(([c, n]) => `${c}: ${n}`).join(", ");
  console.log(`node ${process.version}; flood: ${values.flood} concurrent reviews of ${floodResult.bytes} bytes`);
  console.log(`webhook peak RSS: ${peakRssMiB.toFixed(0)} MiB`);
  console.log(`flood answers by HTTP code (-1: connection cut): ${fmt(Object.entries(floodResult.codes))}`);
  console.log(`genuine reviews (${latencies.length}) by HTTP code (200: decided, 429: refused): ${fmt([...codes])}`);
  for (const [code, text] of samples) console.log(`  a ${code} answer: ${text}`);
  console.log(`genuine latency: p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`);
}

/** A forged review of about `bytes`, made of many short strings (the costliest JSON to parse). */
function forged(bytes: number): Buffer {
  const items = Math.max(1, Math.floor((bytes - 400) / 4));
  const filler = '"a",'.repeat(items).slice(0, -1);
  return Buffer.from(
    `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged","operation":"DELETE",` +
      `"resource":{"group":"g","version":"v1","resource":"r"},"name":"x","oldObject":{"metadata":{"name":"x"},"spec":{"l":[${filler}]}}}}`,
  );
}

function post(port: number, ca: Buffer, body: Buffer, agent: https.Agent): Promise<{ code: number; text: string }> {
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/validate/c1",
        method: "POST",
        ca,
        agent,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ code: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", () => resolve({ code: -1, text: "" }));
    req.end(body);
  });
}
