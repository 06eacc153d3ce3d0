// The server side of `node bench/review-cpu.ts`, run in a child process so its CPU is its own: the real webhook
// server (src/webhook/http/server.ts) with the real admission handler, a rule registry holding one rule and the
// dependents index in index mode (its watch a stand-in holding VMs, as the unit tests' index-fake-watch.ts), wired as
// src/webhook/runtime.ts wires them: createLogger to stdout (the parent points it at /dev/null), default process
// metrics, the open-requests gauge. `--floor` serves a bare node:https server that reads the body and answers a fixed
// allowed review instead: what TLS and HTTP alone cost on this machine.
//
// Over IPC it answers "cpu" with its process.cpuUsage(), the CPU spent inside the handler (the decision, with --split)
// and the reviews seen so far; "profile-start" and "profile-stop" profile what runs in between (node:inspector);
// "exit" closes the server and exits.
import https from "node:https";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { Registry } from "prom-client";
import { createLogger } from "../src/observability/logger.ts";
import { createAdmissionHandler, type AdmissionHandler } from "../src/webhook/deletion/handler.ts";
import { DependentsIndex } from "../src/webhook/deletion/index/index.ts";
import { createWebhookMetrics, processMetrics } from "../src/webhook/metrics.ts";
import { buildRegistry } from "../src/webhook/rules/registry.ts";
import { createOpenRequests, startWebhookServer } from "../src/webhook/http/server.ts";
import { fakeWatches, vmObject } from "../test/unit/index-fake-watch.ts";
import { dependencyRule } from "../tools/kcp/rules.ts";

/** The provider's logical cluster: the rule's dependency names root:network, resolved to it. */
export const PROVIDER = "net1";
export const CONSUMER = "consumer1";
/** The VPC a VM references (its DELETE is denied) and one nobody references (allowed). */
export const USED_VPC = "vpc-used";
export const FREE_VPC = "vpc-free";

export interface ServerCpu {
  user: number;
  system: number;
  /** Microseconds of CPU between the handler's call and its answer, summed over all reviews. */
  decisionMicros: number;
  reviews: number;
}

const RULE = dependencyRule(
  "vm-needs-vpc",
  [{ path: "root:network", group: "network.example.io", resource: "vpcs", exportName: "network" }],
  { cluster: "compute", dependent: { group: "compute.example.io", resource: "virtualmachines" } },
);

/** The index of one VM type, holding `dependents` VMs in the consumer: the first names USED_VPC, the rest others. */
function indexHolding(dependents: number, logger: ReturnType<typeof createLogger>) {
  const registry = buildRegistry([RULE], new Map([["root:network", { ok: true, cluster: PROVIDER as never }]]));
  const { factory, built } = fakeWatches();
  const index = new DependentsIndex({ watch: factory, logger: logger.child({ part: "index" }) });
  index.follow(registry);
  const vms = Array.from({ length: Math.max(1, dependents) }, (_, i) =>
    vmObject(CONSUMER, `vm-${i}`, i === 0 ? USED_VPC : `vpc-${i}`),
  );
  const watch = built[0]?.watch;
  if (!watch) throw new Error("the index built no watch for the rule's dependent type");
  watch.endpoint("https://shard-a/services/apiexport/compute/compute.example.io", vms);
  return { registry, index };
}

/** The handler, with the CPU between its call and its answer added to `cpu.decisionMicros`. */
function measured(handler: AdmissionHandler, cpu: ServerCpu): AdmissionHandler {
  return async (request, provider) => {
    const start = process.cpuUsage();
    try {
      return await handler(request, provider);
    } finally {
      const d = process.cpuUsage(start);
      cpu.decisionMicros += d.user + d.system;
      cpu.reviews++;
    }
  };
}

async function startReal(dir: string, o: ServeOptions, cpu: ServerCpu) {
  const logger = createLogger("webhook");
  const metricsRegistry = new Registry();
  processMetrics(metricsRegistry);
  const metrics = createWebhookMetrics(metricsRegistry);
  const { registry, index } = indexHolding(o.dependents, logger);
  const handler = createAdmissionHandler({
    registry: () => registry,
    finder: index,
    logger: logger.child({ part: "admission" }),
    metrics,
  });
  const server = await startWebhookServer({
    host: "127.0.0.1",
    port: 0,
    tls: { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") },
    handler: o.split ? measured(handler, cpu) : handler,
    onRefusal: (reason) => metrics.refusals.inc({ reason }),
    openRequests: createOpenRequests(metricsRegistry),
    logger,
    metrics,
  });
  return { port: server.port, close: () => server.close() };
}

/** A bare HTTPS server: reads the body, answers a fixed allowed review. The floor under any review's cost. */
async function startFloor(dir: string, cpu: ServerCpu) {
  const reply = JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: "floor", allowed: true },
  });
  const server = https.createServer(
    { cert: readFileSync(join(dir, "tls.crt")), key: readFileSync(join(dir, "tls.key")) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        cpu.reviews++;
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(reply) });
        res.end(reply);
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A CPU profile of what runs between start and stop (startup left out), written to `dir` as a .cpuprofile. */
function profiler(dir: string | undefined) {
  const session = new Session();
  if (dir) session.connect();
  return {
    start: async () => {
      if (!dir) return;
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 100 });
      await session.post("Profiler.start");
    },
    stop: async () => {
      if (!dir) return;
      const { profile } = await session.post("Profiler.stop");
      const file = join(dir, `review-cpu-${process.pid}.cpuprofile`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
      process.stderr.write(`profile: ${file}\n`);
    },
  };
}

export interface ServeOptions {
  floor: boolean;
  dependents: number;
  /** Measure the handler's own CPU (costs two process.cpuUsage() calls per review, about 20 µs here). */
  split: boolean;
  /** Write a CPU profile of the measured runs here. */
  profileDir?: string | undefined;
}

/** The child's main: starts the server, reports its port, then answers the parent's messages. */
export async function serve(dir: string, o: ServeOptions): Promise<void> {
  const cpu: ServerCpu = { user: 0, system: 0, decisionMicros: 0, reviews: 0 };
  const server = o.floor ? await startFloor(dir, cpu) : await startReal(dir, o, cpu);
  const prof = profiler(o.profileDir);
  process.send?.({ port: server.port });
  process.on("disconnect", () => process.exit(0)); // the driver is gone
  process.on("message", (m) => {
    if (m === "exit") return void server.close().then(() => process.exit(0));
    if (m === "profile-start") return void prof.start().then(() => process.send?.({}));
    if (m === "profile-stop") return void prof.stop().then(() => process.send?.({}));
    const usage = process.cpuUsage();
    process.send?.({ ...cpu, user: usage.user, system: usage.system });
  });
}
