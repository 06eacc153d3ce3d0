// The conditions of `node bench/webhook-floor.ts`, the VWC each puts in the network provider's workspace (written by
// kcp-admin), the order of the blocks, switching from one condition to the next, and starting the floor server.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  WORKSPACE_PATHS_ANNOTATION,
  buildConfiguration,
  type ValidatingWebhookConfiguration,
} from "../src/controller/desired.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../src/api/wire.ts";
import type { GroupVersionResource } from "../src/api/rule.ts";
import { isApiError } from "../src/kcp/rest.ts";
import { VWC_PATH, tryDelete } from "../tools/kcp/objects.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { NODE_FLAGS } from "../tools/kcp/binaries.ts";
import { PATHS } from "../tools/kcp/topology.ts";
import { PROBE_VPC, type BenchEnv } from "./env.ts";
import type { FloorCpu } from "./webhook-floor-server.ts";

export const CONDITIONS = ["alone", "floor", "webhook"] as const;
export type Condition = (typeof CONDITIONS)[number];

/** The VWC of each condition that has one. */
export type Vwcs = Record<Exclude<Condition, "alone">, ValidatingWebhookConfiguration>;

export interface Block {
  condition: Condition;
  count: number;
}

/**
 * Blocks of at most `size` DELETEs, `perCondition` for each condition, in rounds that alternate forwards and backwards
 * (a b c c b a a b c ...): a condition's blocks sit early and late alike, so a drift of the machine cancels.
 */
export function schedule(conds: readonly Condition[], perCondition: number, size: number): Block[] {
  const rounds = Math.ceil(perCondition / Math.max(1, size));
  const blocks: Block[] = [];
  for (let r = 0; r < rounds; r++) {
    const count = Math.min(size, perCondition - r * size);
    for (const condition of r % 2 === 0 ? conds : [...conds].reverse()) blocks.push({ condition, count });
  }
  return blocks;
}

/**
 * The controller's VWC as it wrote it (read back, server fields dropped), and the same built by buildConfiguration
 * for the floor server: the controller's targets, workspace paths, URL form (`<base>/validate/<cluster>`), failure
 * policy, match policy and timeout; only the base URL and the CA differ.
 */
export async function vwcsFor(env: BenchEnv, floorPort: number, floorCaPem: Buffer): Promise<Vwcs> {
  const read = await env.kcp.ws(PATHS.network).get<ValidatingWebhookConfiguration>(VWC_PATH);
  const { name, labels, annotations } = read.metadata;
  const webhook: ValidatingWebhookConfiguration = { ...read, metadata: { name, labels, annotations } };
  const targets: GroupVersionResource[] = (read.webhooks?.[0]?.rules ?? []).map((r) => ({
    group: r.apiGroups[0] ?? "",
    version: r.apiVersions[0] ?? "",
    resource: r.resources[0] ?? "",
  }));
  const paths = (annotations?.[WORKSPACE_PATHS_ANNOTATION] ?? "").split(",").filter(Boolean);
  const base = `https://127.0.0.1:${floorPort}`;
  const floor = buildConfiguration(env.topo.clusters.network, targets, base, floorCaPem.toString("base64"), paths);
  return { webhook, floor };
}

/**
 * Puts `cond`'s VWC in place (deletes the one there, creates the new: one name for all) and waits until kcp's
 * admission shows it three times running on a dry-run DELETE of the probe VPC, which a VM references: the real
 * webhook denies it (409); the floor allows it and counts one review; with no VWC it is allowed and the floor counts
 * none. Returns the milliseconds it took.
 */
export async function switchTo(env: BenchEnv, floor: FloorServer, vwcs: Vwcs, cond: Condition): Promise<number> {
  const started = Date.now();
  const network = env.kcp.ws(PATHS.network);
  await network.request("DELETE", VWC_PATH).catch((err: unknown) => {
    if (!isApiError(err, 404)) throw err;
  });
  if (cond !== "alone") await network.request("POST", WEBHOOK_CONFIGURATIONS_PATH, { body: vwcs[cond] });
  let running = 0;
  await waitFor(
    `kcp's admission to show condition ${cond}`,
    async () => {
      const before = (await floor.cpu()).reviews;
      const r = await tryDelete(env.consumer, PROBE_VPC, { dryRun: true });
      const reviews = (await floor.cpu()).reviews - before;
      const shows =
        cond === "webhook" ? !r.allowed && r.status === 409 : r.allowed && reviews === (cond === "floor" ? 1 : 0);
      running = shows ? running + 1 : 0;
      return running >= 3 || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  return Date.now() - started;
}

export interface FloorServer {
  port: number;
  pid: number | undefined;
  cpu(): Promise<FloorCpu>;
  exit(): Promise<void>;
}

/** Forks the floor server with the webhook's V8 flags, serving `<dir>/tls.crt` and `tls.key`. */
export async function startFloorServer(dir: string): Promise<FloorServer> {
  const proc = fork(fileURLToPath(new URL("./webhook-floor-server.ts", import.meta.url)), [dir], {
    execArgv: [...process.execArgv, ...NODE_FLAGS],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
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
