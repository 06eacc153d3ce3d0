// Fault injection at seeded random moments: SIGKILL and restart of a webhook replica, of both, and of the controller;
// SIGSTOP/SIGCONT of one or both replicas for longer than kcp's 10 s webhook timeout; and the webhook address made
// unreachable (the proxy resets every connection); and shard-1's kcp stopped (SIGSTOP/SIGCONT), so its consumers, its
// rules and its virtual workspaces go silent at once. Each fault is recorded with the interval it lasted.
import type { FaultKind, FaultRecord } from "./history.ts";
import type { Rng } from "./rng.ts";
import { type SoakEnv } from "./env.ts";
import { sleep } from "./oplog.ts";
import type { Supervised } from "./replicas.ts";

const KINDS: FaultKind[] = [
  "kill-webhook-replica",
  "kill-all-webhooks",
  "stall-webhook-replica",
  "stall-all-webhooks",
  "webhook-unreachable",
  "kill-controller",
  "stall-shard",
];

export async function injectFaults(
  env: SoakEnv,
  rng: Rng,
  everyMs: [number, number],
  signal: AbortSignal,
  faults: FaultRecord[],
  log: (line: string) => void,
): Promise<void> {
  while (!signal.aborted) {
    await sleep(rng.int(...everyMs), signal);
    if (signal.aborted) return;
    const kind = rng.pick(KINDS);
    const f = await inject(env, rng, kind);
    faults.push(f);
    log(`fault ${f.kind} (${f.target}) ${Math.round((f.endAt - f.startAt) / 100) / 10} s`);
  }
}

type RecordFault = (target: string, startAt: number, endAt: number, webhookDown: boolean) => FaultRecord;

async function inject(env: SoakEnv, rng: Rng, kind: FaultKind): Promise<FaultRecord> {
  const replica = rng.int(0, env.webhooks.length - 1);
  const one = env.webhooks[replica];
  if (!one) throw new Error("no webhook replica");
  const record: RecordFault = (target, startAt, endAt, webhookDown) => ({ kind, target, startAt, endAt, webhookDown });
  switch (kind) {
    case "kill-webhook-replica":
    case "kill-all-webhooks":
    case "stall-webhook-replica":
    case "stall-all-webhooks":
      return killOrStallWebhooks(env, rng, kind, one, record);
    case "webhook-unreachable": {
      env.proxy.unreachable = true;
      env.proxy.dropConnections();
      const startAt = Date.now();
      await sleep(rng.int(4000, 10_000));
      const endAt = Date.now();
      env.proxy.unreachable = false;
      return record("the webhook address", startAt, endAt, true);
    }
    case "stall-shard": {
      // Shorter than the webhook's watch watchdog (60 s + 15 s): the streams must pick up where they stalled.
      const pid = env.kcp.shardPid(1);
      process.kill(pid, "SIGSTOP");
      const startAt = Date.now();
      try {
        await sleep(rng.int(5_000, 20_000));
      } finally {
        process.kill(pid, "SIGCONT");
      }
      return record("shard-1", startAt, Date.now(), false);
    }
    case "kill-controller": {
      env.controller.kill("SIGKILL");
      const startAt = Date.now();
      await sleep(rng.int(500, 5000));
      await env.controller.start();
      return record("controller", startAt, Date.now(), false);
    }
    case "careless-rule":
      throw new Error("the careless rule is the careless author's fault (careless.ts), not the injector's");
  }
}

/** SIGKILL (then a restart) or SIGSTOP/SIGCONT of one replica or of all of them. */
async function killOrStallWebhooks(
  env: SoakEnv,
  rng: Rng,
  kind: "kill-webhook-replica" | "kill-all-webhooks" | "stall-webhook-replica" | "stall-all-webhooks",
  one: Supervised,
  record: RecordFault,
): Promise<FaultRecord> {
  const all = env.webhooks;
  switch (kind) {
    case "kill-webhook-replica": {
      one.kill("SIGKILL");
      const startAt = Date.now();
      await sleep(rng.int(500, 4000));
      await one.start();
      return record(one.name, startAt, Date.now(), false);
    }
    case "kill-all-webhooks": {
      for (const w of all) w.kill("SIGKILL");
      const startAt = Date.now();
      await sleep(rng.int(3000, 8000));
      const endAt = Date.now();
      await Promise.all(all.map((w) => w.start()));
      return record("all webhooks", startAt, endAt, true);
    }
    case "stall-webhook-replica": {
      one.kill("SIGSTOP");
      const startAt = Date.now();
      await sleep(rng.int(11_000, 15_000));
      one.kill("SIGCONT");
      return record(one.name, startAt, Date.now(), false);
    }
    case "stall-all-webhooks": {
      for (const w of all) w.kill("SIGSTOP");
      const startAt = Date.now();
      await sleep(rng.int(11_000, 14_000));
      const endAt = Date.now();
      for (const w of all) w.kill("SIGCONT");
      return record("all webhooks", startAt, endAt, true);
    }
  }
}
