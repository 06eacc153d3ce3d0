// The conditions of `node bench/webhook-floor.ts`, the VWC each puts in the network provider's workspace (written by
// kcp-admin), the order of the blocks, and switching from one condition to the next.
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
import { PATHS } from "../tools/kcp/topology.ts";
import { PROBE_VPC, type BenchEnv } from "./env.ts";
import type { FloorServer } from "./webhook-floor-start.ts";

/**
 * alone: no VWC; floor (node:https), floor-h2 (node:http2), floor-go (Go, HTTP/2), floor-go-h1 (Go, HTTP/1.1): a bare
 * webhook; webhook: ours.
 */
export const CONDITIONS = ["alone", "floor", "floor-h2", "floor-go", "floor-go-h1", "webhook"] as const;
export type Condition = (typeof CONDITIONS)[number];
export type FloorCondition = Exclude<Condition, "alone" | "webhook">;
export const isFloor = (c: Condition): c is FloorCondition => c !== "alone" && c !== "webhook";

/** The floor servers running (those the conditions name). */
export type Floors = Map<FloorCondition, FloorServer>;

/** The VWC of each condition that has one. */
export type Vwcs = Partial<Record<Exclude<Condition, "alone">, ValidatingWebhookConfiguration>>;

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
 * for each floor server: the controller's targets, workspace paths, URL form (`<base>/validate/<cluster>`), failure
 * policy, match policy and timeout; only the base URL and the CA differ.
 */
export async function vwcsFor(env: BenchEnv, floors: Floors, floorCaPem: Buffer): Promise<Vwcs> {
  const read = await env.kcp.ws(PATHS.network).get<ValidatingWebhookConfiguration>(VWC_PATH);
  const { name, labels, annotations } = read.metadata;
  const webhook: ValidatingWebhookConfiguration = { ...read, metadata: { name, labels, annotations } };
  const targets: GroupVersionResource[] = (read.webhooks?.[0]?.rules ?? []).map((r) => ({
    group: r.apiGroups[0] ?? "",
    version: r.apiVersions[0] ?? "",
    resource: r.resources[0] ?? "",
  }));
  const paths = (annotations?.[WORKSPACE_PATHS_ANNOTATION] ?? "").split(",").filter(Boolean);
  const vwcs: Vwcs = { webhook };
  for (const [cond, floor] of floors) {
    const base = `https://127.0.0.1:${floor.port}`;
    vwcs[cond] = buildConfiguration(env.topo.clusters.network, targets, base, floorCaPem.toString("base64"), paths);
  }
  return vwcs;
}

/**
 * Puts `cond`'s VWC in place (deletes the one there, creates the new: one name for all) and waits until kcp's
 * admission shows it three times running on a dry-run DELETE of the probe VPC, which a VM references: the real
 * webhook denies it (409); a floor allows it and counts one review; with no VWC it is allowed. Every other floor
 * counts none. Returns the milliseconds it took.
 */
export async function switchTo(env: BenchEnv, floors: Floors, vwcs: Vwcs, cond: Condition): Promise<number> {
  const started = Date.now();
  const network = env.kcp.ws(PATHS.network);
  await network.request("DELETE", VWC_PATH).catch((err: unknown) => {
    if (!isApiError(err, 404)) throw err;
  });
  if (cond !== "alone") {
    const body = vwcs[cond];
    if (!body) throw new Error(`no VWC for condition ${cond}`);
    await network.request("POST", WEBHOOK_CONFIGURATIONS_PATH, { body });
  }
  let running = 0;
  await waitFor(
    `kcp's admission to show condition ${cond}`,
    async () => {
      const before = await reviewsOf(floors);
      const r = await tryDelete(env.consumer, PROBE_VPC, { dryRun: true });
      const after = await reviewsOf(floors);
      const floorsRight = [...floors.keys()].every(
        (c) => (after.get(c) ?? 0) - (before.get(c) ?? 0) === (c === cond ? 1 : 0),
      );
      const shows = floorsRight && (cond === "webhook" ? !r.allowed && r.status === 409 : r.allowed);
      running = shows ? running + 1 : 0;
      return running >= 3 || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  return Date.now() - started;
}

async function reviewsOf(floors: Floors): Promise<Map<FloorCondition, number>> {
  const out = new Map<FloorCondition, number>();
  for (const [c, floor] of floors) out.set(c, (await floor.cpu()).reviews);
  return out;
}
