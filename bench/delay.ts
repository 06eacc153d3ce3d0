// 5. Index delay: how long after a write in kcp the webhook's index has it, measured from outside. One sample: create
// a fresh VPC and then a VM referencing it (in a namespace of their own), then send dry-run DELETEs of that VPC back
// to back until the first 409. The delay is the time from the VM create's response to the start of the request that
// got the first 409 (about 0 when the first one is denied); its resolution is one dry-run DELETE round trip (client →
// kcp → webhook → kcp → client), reported alongside.
//
// Samples are taken on a quiet kcp in every lookup mode (live mode reads kcp on every DELETE: it has no index, so
// its figure is the probe's floor), and in index mode while a namespace teardown of `loadPairs` VPC/VM pairs runs
// (its own protected teardown, so the teardown phase's timings are not disturbed by the probe).
import { VMS, VPCS, at, tryDelete, vm, vpc } from "../tools/kcp/objects.ts";
import type { LookupMode } from "../tools/kcp/topology.ts";
import { createAll, ensureNamespace } from "./populate.ts";
import { setProtection, useLookup, type BenchEnv } from "./env.ts";
import { summarize, type Summary } from "./stats.ts";
import { createPairs, deleteNamespace } from "./teardown.ts";

export const DELAY_NS = "bench-delay";

export interface DelayOptions {
  /** Samples on a quiet kcp, per mode. */
  samples: number;
  /** VPC/VM pairs in the namespace torn down while the loaded samples are taken (index mode); 0 = none. */
  loadPairs: number;
  modes: LookupMode[];
  concurrency: number;
  timeoutMs: number;
}

export interface DelaySample {
  delayMs: number;
  /** Dry-run DELETEs sent until the first 409 (1 = the first was already denied). */
  polls: number;
  /** Mean round trip of this sample's dry-run DELETEs: the probe's resolution. */
  rttMs: number;
}

export interface DelaySeries {
  mode: LookupMode;
  load: "quiet" | "teardown";
  samples: DelaySample[];
  delay: Summary;
  rtt: Summary;
  /** Samples whose first dry-run DELETE was already denied. */
  firstPoll: number;
  /** Load only: pairs torn down, and how long the teardown took with the probe running. */
  loadPairs?: number;
  teardownMs?: number;
  errors: string[];
}

const GAP_MS = 100;
const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec));

export async function runDelay(env: BenchEnv, opts: DelayOptions): Promise<DelaySeries[]> {
  if (!env.protected) await setProtection(env, true);
  await ensureNamespace(env.consumer, DELAY_NS);
  const out: DelaySeries[] = [];
  let seq = 0;
  for (const mode of opts.modes) {
    await useLookup(env, mode);
    const errors: string[] = [];
    const samples: DelaySample[] = [];
    for (let i = 0; i < opts.samples; i++) {
      const s = await sampleOnce(env, `${mode[0]}${seq++}`, opts.timeoutMs, errors);
      if (s) samples.push(s);
      await sleep(GAP_MS);
    }
    out.push(series(mode, "quiet", samples, errors));
    env.log(`index delay lookup=${mode}, quiet: p50 ${out.at(-1)?.delay.p50.toFixed(1)} ms`);
  }
  if (opts.loadPairs > 0 && opts.modes.includes("index")) {
    await useLookup(env, "index");
    out.push(await underTeardown(env, opts, () => `l${seq++}`));
    env.log(`index delay lookup=index, under teardown: p50 ${out.at(-1)?.delay.p50.toFixed(1)} ms`);
  }
  return out;
}

/** Samples taken one after another while a namespace of `loadPairs` pairs is deleted; at least one is taken. */
async function underTeardown(env: BenchEnv, opts: DelayOptions, nextId: () => string): Promise<DelaySeries> {
  const ns = `delay-load-${opts.loadPairs}`;
  env.log(`index delay: creating ${opts.loadPairs} VPC/VM pairs in ${ns} to tear down`);
  await createPairs(env, ns, opts.loadPairs, opts.concurrency);
  const errors: string[] = [];
  const samples: DelaySample[] = [];
  const started = Date.now();
  let done = false;
  const teardown = deleteNamespace(env, ns, opts.timeoutMs).then((error) => {
    done = true;
    if (error) errors.push(`teardown: ${error}`);
    return Date.now() - started;
  });
  while (!done) {
    const s = await sampleOnce(env, nextId(), opts.timeoutMs, errors);
    if (s) samples.push(s);
    await sleep(GAP_MS);
  }
  const teardownMs = await teardown;
  return { ...series("index", "teardown", samples, errors), loadPairs: opts.loadPairs, teardownMs };
}

async function sampleOnce(
  env: BenchEnv,
  id: string,
  timeoutMs: number,
  errors: string[],
): Promise<DelaySample | undefined> {
  const ws = env.consumer;
  const vpcName = `dv-${id}`;
  await createAll(ws, [vpc(vpcName, DELAY_NS)]);
  await ws.request("POST", at(VMS, DELAY_NS), { body: vm(`dm-${id}`, { vpc: vpcName }, DELAY_NS) });
  const created = performance.now();
  const rtts: number[] = [];
  while (performance.now() - created < timeoutMs) {
    const start = performance.now();
    const r = await tryDelete(ws, `${at(VPCS, DELAY_NS)}/${vpcName}`, { dryRun: true });
    rtts.push(performance.now() - start);
    if (!r.allowed && r.status === 409) {
      const mean = rtts.reduce((a, b) => a + b, 0) / rtts.length;
      return { delayMs: start - created, polls: rtts.length, rttMs: mean };
    }
    if (!r.allowed && errors.length < 20) errors.push(`dry-run DELETE ${vpcName}: ${r.status} ${r.message}`);
  }
  errors.push(`${vpcName}: no 409 within ${timeoutMs} ms of its VM's create`);
  return undefined;
}

function series(mode: LookupMode, load: DelaySeries["load"], samples: DelaySample[], errors: string[]): DelaySeries {
  return {
    mode,
    load,
    samples,
    delay: summarize(samples.map((s) => s.delayMs)),
    rtt: summarize(samples.map((s) => s.rttMs)),
    firstPoll: samples.filter((s) => s.polls === 1).length,
    errors,
  };
}
