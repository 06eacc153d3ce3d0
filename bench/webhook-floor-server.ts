// The floor webhook of `node bench/webhook-floor.ts`, in a child process so its CPU is its own: a bare node:https
// server (or, with "h2", node:http2 offering HTTP/2 and HTTP/1.1) that reads the AdmissionReview, parses it (only to echo its uid: kcp refuses an answer whose uid differs) and
// answers allowed. Nothing else: no routing, no logging, no metrics. Whatever kcp spends to call it is kcp's own cost
// of calling any webhook. (bench/review-cpu-server.ts's floor answers a fixed uid: fine without kcp, refused by it.)
//
// Over IPC it answers "cpu" with its process.cpuUsage(), the reviews seen and the TLS connections accepted so far;
// "exit" closes the server and exits. It imports Node built-ins only, so that nothing else loads into the child.
import https from "node:https";
import http2 from "node:http2";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface FloorCpu {
  /** process.cpuUsage() of the server, µs. */
  user: number;
  system: number;
  reviews: number;
  /** Reviews that came over HTTP/2. */
  http2: number;
  /** TLS connections accepted: a new one per review would mean kcp does not keep its connection to a webhook. */
  connections: number;
}

/** The answer to `body` (an AdmissionReview): allowed, with the request's uid. */
export function allowedReply(body: string): string {
  const review = JSON.parse(body) as { request?: { uid?: string } };
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: review.request?.uid ?? "", allowed: true },
  });
}

/** What the handler needs of a request and a response, alike in node:https and node:http2's compatibility API. */
interface Request {
  httpVersion: string;
  on(event: "data", fn: (chunk: Buffer) => void): unknown;
  on(event: "end", fn: () => void): unknown;
}
interface Response {
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  end(body: string): unknown;
}

async function serve(dir: string, h2: boolean): Promise<void> {
  const state = { reviews: 0, http2: 0, connections: 0 };
  const handler = (req: Request, res: Response): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      state.reviews++;
      if (req.httpVersion === "2.0") state.http2++;
      const reply = allowedReply(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(reply) });
      res.end(reply);
    });
  };
  const tls = { cert: readFileSync(join(dir, "tls.crt")), key: readFileSync(join(dir, "tls.key")) };
  // With h2, node:http2 offers HTTP/2 in ALPN (kcp's client takes it) and HTTP/1.1 beside it.
  const server = h2
    ? http2.createSecureServer({ ...tls, allowHTTP1: true }, handler)
    : https.createServer(tls, handler);
  server.on("secureConnection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  process.send?.({ port: typeof address === "object" && address ? address.port : 0 });
  process.on("disconnect", () => process.exit(0)); // the driver is gone
  process.on("message", (m) => {
    if (m === "exit") return void server.close(() => process.exit(0));
    const usage = process.cpuUsage();
    process.send?.({ ...state, user: usage.user, system: usage.system } satisfies FloorCpu);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send)
  await serve(process.argv[2] ?? ".", process.argv[3] === "h2");
