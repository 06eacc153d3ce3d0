// `node bench/review-cpu-warm.ts` beside a running `npm run bench`: warms the bench's freshly started webhook with
// --reviews allowed DELETE reviews sent straight to its port (back to back, one keep-alive connection, the shape
// kcp sends: kcp-review.ts), so that the bench's timed DELETEs meet code V8 has already optimized, as a webhook that
// has run for a while would. It finds the webhook started from this tree (its command line gives the port, the
// certificate and the kcp root directory), waits until the controller has written the provider's VWC (the URL path
// kcp calls), reads the consumer workspace's logical cluster, sends the reviews, and prints how long that took and
// what the webhook answered. An experiment on the bench's webhook, not part of the bench: its decision histogram and
// counters include these reviews (sent before the first timed DELETE when started with the bench: see bench/README.md).
//
//   --reviews=1500   --timeout=300 (s to wait for the webhook and its VWC)
import { readdirSync, readFileSync } from "node:fs";
import https from "node:https";
import { dirname, join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import { loadKcpConnection } from "../src/kcp/kubeconfig.ts";
import { KCP_HEADERS, kcpReview } from "./kcp-review.ts";

const { values } = parseArgs({
  options: { reviews: { type: "string", default: "1500" }, timeout: { type: "string", default: "300" } },
});
const TREE = resolve(fileURLToPath(import.meta.url), "../..");
const deadline = Date.now() + Number(values.timeout) * 1000;
const log = (line: string) => process.stderr.write(`[warm ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** The webhook started from this tree: its --flag=value arguments. */
function webhookArgs(): Map<string, string> | undefined {
  const entries = [join(TREE, "dist/cmd/webhook.js"), join(TREE, "src/cmd/webhook.ts")];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (!argv.some((a) => entries.includes(a))) continue;
    const flags = argv.filter((a) => a.startsWith("--") && a.includes("="));
    return new Map(flags.map((a) => [a.slice(2, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]));
  }
  return undefined;
}

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await Promise.resolve(f()).catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(200);
  }
}

const args = await until("the bench's webhook", webhookArgs);
const port = Number(args.get("webhook-port"));
const ca = readFileSync(join(dirname(args.get("tls-cert-file")!), "ca.crt"));
const rootDir = dirname(args.get("kubeconfig")!);
const admin = loadKcpConnection({ kubeconfig: join(rootDir, "admin.kubeconfig"), context: "base" }).base;
log(`webhook on port ${port}, kcp in ${rootDir}`);
type Vwc = { webhooks?: { clientConfig?: { url?: string } }[] };
const vwcs = "/clusters/root:network-provider/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const url = await until("the provider's VWC", async () => {
  const list = await admin.request<{ items?: Vwc[] }>("GET", vwcs);
  return list.items?.[0]?.webhooks?.[0]?.clientConfig?.url;
});
type LogicalCluster = { metadata?: { annotations?: Record<string, string> } };
const lc = await admin.request<LogicalCluster>(
  "GET",
  "/clusters/root:consumer1/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
);
const consumer = lc.metadata?.annotations?.["kcp.io/cluster"] ?? "unknown";
const path = new URL(url).pathname + "?timeout=10s";
log(`sending ${values.reviews} reviews to ${path} (consumer ${consumer})`);

const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
const post = (body: Buffer) =>
  new Promise<string>((done, fail) => {
    const req = https.request({ host: "127.0.0.1", port, path, method: "POST", ca, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => done(Buffer.concat(chunks).toString()));
    });
    for (const [name, value] of Object.entries(KCP_HEADERS)) req.setHeader(name, value);
    req.on("error", fail);
    req.end(body);
  });
const started = performance.now();
const answers = new Map<string, number>();
for (let i = 0; i < Number(values.reviews); i++) {
  const body = Buffer.from(JSON.stringify(kcpReview(randomUUID(), `warm-${i}`, consumer, "network.test.io")));
  const allowed = String((JSON.parse(await post(body)) as { response?: { allowed?: boolean } }).response?.allowed);
  answers.set(allowed, (answers.get(allowed) ?? 0) + 1);
}
agent.destroy();
admin.close();
log(
  `done in ${((performance.now() - started) / 1000).toFixed(1)} s; allowed: ${JSON.stringify(Object.fromEntries(answers))}`,
);
