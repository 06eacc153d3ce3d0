// `/work/bin/kcp-slot node bench/review-cpu-capture.ts`: what kcp v0.30.0 really sends the webhook, to hold
// bench/kcp-review.ts (the review `node bench/review-cpu.ts` sends) to it. Starts the bench's world (bench/env.ts: a
// real kcp, the topology, the controller, the VM rule), stops the webhook and serves a recorder on its port with its
// certificate: plain TLS, so it sees the ALPN protocols kcp offers and every decrypted chunk as it arrives. It answers
// each review "allowed" (HTTP/1.1, keep-alive, the webhook's reply shape) while the consumer deletes VPCs one by one,
// a few dry-run and then real, then prints per connection: the protocols offered, and per request the request line,
// the headers, the body's size, the chunks it arrived in and the body itself (the last one, pretty).
//
//   --deletes=20   --pace=10 (ms between DELETEs)   --alpn=http/1.1 (the protocol the recorder picks; "none" to pick none)
import { readFileSync } from "node:fs";
import tls from "node:tls";
import { setTimeout as delay } from "node:timers/promises";
import { parseArgs } from "node:util";
import { VPCS, at, tryDelete, vpc } from "../tools/kcp/objects.ts";
import { startBench, stopBench } from "./env.ts";
import { createAll, ensureNamespace } from "./populate.ts";

const { values } = parseArgs({
  options: {
    deletes: { type: "string", default: "20" },
    pace: { type: "string", default: "10" },
    alpn: { type: "string", default: "http/1.1" },
  },
});

interface Seen {
  /** Milliseconds since the connection's first byte, and the chunk's size. */
  chunks: [number, number][];
  head: string;
  body: string;
}

interface Conn {
  offered: string[];
  chosen: string;
  requests: Seen[];
}

const conns: Conn[] = [];

/** Splits `buf` into whole HTTP/1.1 requests (content-length bodies only, as kcp sends); returns what is left. */
function takeRequests(buf: Buffer, conn: Conn, chunks: [number, number][]): Buffer {
  for (;;) {
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return buf;
    const head = buf.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (buf.length < end + 4 + length) return buf;
    const body = buf.subarray(end + 4, end + 4 + length).toString("utf8");
    conn.requests.push({ chunks: chunks.splice(0), head, body });
    buf = buf.subarray(end + 4 + length);
  }
}

function reply(body: string): string {
  const uid = (JSON.parse(body) as { request?: { uid?: string } }).request?.uid ?? "";
  const json = JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid, allowed: true },
  });
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

function recorder(cert: string, key: string): tls.Server {
  let offered: string[] = [];
  const ALPNCallback = ({ protocols }: { protocols: string[] }) => {
    offered = protocols;
    return values.alpn === "none" ? undefined : values.alpn;
  };
  return tls.createServer({ cert: readFileSync(cert), key: readFileSync(key), ALPNCallback }, (socket) => {
    const conn: Conn = { offered, chosen: String(socket.alpnProtocol), requests: [] };
    conns.push(conn);
    const t0 = performance.now();
    const chunks: [number, number][] = [];
    let buf: Buffer = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      chunks.push([Math.round((performance.now() - t0) * 10) / 10, d.length]);
      buf = Buffer.concat([buf, d]);
      const before = conn.requests.length;
      buf = takeRequests(buf, conn, chunks);
      for (const r of conn.requests.slice(before)) socket.write(reply(r.body));
    });
    socket.on("error", () => undefined);
  });
}

function report(): void {
  for (const [i, c] of conns.entries()) {
    console.log(
      `connection ${i}: ALPN offered ${JSON.stringify(c.offered)}, chosen ${c.chosen}, ${c.requests.length} requests`,
    );
    for (const r of c.requests) {
      const line = r.head.split("\r\n")[0];
      const chunks = r.chunks.map(([, n]) => n).join("+");
      console.log(`  ${line}  body ${Buffer.byteLength(r.body)} B, arrived in ${r.chunks.length} chunk(s): ${chunks}`);
    }
  }
  const last = conns.flatMap((c) => c.requests).at(-1);
  if (!last) return void console.log("no request reached the recorder");
  console.log(
    `\nthe last request's head:\n${last.head}\n\nits body:\n${JSON.stringify(JSON.parse(last.body), null, 2)}`,
  );
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const env = await startBench(log);
try {
  const bins = env.bins;
  await bins.webhook?.proc.stop();
  const server = recorder(bins.certs.cert, bins.certs.key);
  await new Promise<void>((done) => server.listen(bins.webhookPort, "127.0.0.1", done));
  const ns = "capture";
  const n = Number(values.deletes);
  await ensureNamespace(env.consumer, ns);
  const names = Array.from({ length: n }, (_, i) => `cap-${i}`);
  await createAll(
    env.consumer,
    names.map((name) => vpc(name, ns)),
  );
  for (const [i, name] of names.entries()) {
    const r = await tryDelete(env.consumer, `${at(VPCS, ns)}/${name}`, { dryRun: i < 3 });
    if (!r.allowed) log(`DELETE ${name}: ${r.status} ${r.message}`);
    await delay(Number(values.pace));
  }
  report();
  server.close();
} finally {
  await stopBench(env);
}
