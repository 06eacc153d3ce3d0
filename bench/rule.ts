// 3. Rule to protection: from creating the DependencyRule to the first DELETE that kcp denies. Each trial starts with
// the rule deleted and protection confirmed off, applies the rule, and polls a dry-run DELETE of the probe VPC (a
// real DELETE would remove the VPC while it is still unprotected) every 50 ms; the webhook is called for dry runs
// too. The moment the controller's VWC appears is polled alongside, to split controller time from kcp + webhook time.
// Run once per lookup mode; in index mode the time to the first denial includes the webhook listing the new
// dependent type through its APIExport virtual workspace (deleting the rule stops that type's watch).
import { apply } from "../tools/kcp/api.ts";
import { PATHS, vmRule, type LookupMode } from "../tools/kcp/topology.ts";
import { VWC_PATH, tryDelete } from "../tools/kcp/objects.ts";
import { PROBE_VPC, setProtection, useLookup, type BenchEnv } from "./env.ts";
import { summarize, type Summary } from "./stats.ts";

export interface RuleOptions {
  trials: number;
  timeoutMs: number;
  modes: LookupMode[];
}

export interface RuleTrial {
  /** Rule created → the VWC is readable in the network provider. */
  vwcMs: number;
  /** Rule created → first denied (409) DELETE. */
  deniedMs: number;
  /** Rule deleted → DELETE allowed again (the previous trial's teardown). */
  offMs: number;
}

export interface RuleResult {
  mode: LookupMode;
  trials: RuleTrial[];
  summary: { vwcMs: Summary; deniedMs: Summary; offMs: Summary };
  pollIntervalMs: number;
  errors: string[];
}

const POLL_MS = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runRule(env: BenchEnv, opts: RuleOptions): Promise<RuleResult[]> {
  const results: RuleResult[] = [];
  for (const mode of opts.modes) {
    await useLookup(env, mode);
    results.push(await trialsIn(env, mode, opts));
  }
  return results;
}

async function trialsIn(env: BenchEnv, mode: LookupMode, opts: RuleOptions): Promise<RuleResult> {
  const trials: RuleTrial[] = [];
  const errors: string[] = [];
  const network = env.kcp.ws(PATHS.network);
  for (let i = 0; i < opts.trials; i++) {
    const offMs = await setProtection(env, false);
    const t0 = performance.now();
    const deadline = Date.now() + opts.timeoutMs;
    let vwcMs = NaN;
    let deniedMs = NaN;
    const vwc = (async () => {
      while (Number.isNaN(vwcMs) && Date.now() < deadline) {
        if ((await network.getOptional(VWC_PATH)) !== undefined) vwcMs = performance.now() - t0;
        else await sleep(POLL_MS);
      }
    })();
    await apply(env.kcp.ws(PATHS.compute), vmRule(env.topo.vars));
    while (Number.isNaN(deniedMs) && Date.now() < deadline) {
      const r = await tryDelete(env.consumer, PROBE_VPC, { dryRun: true });
      if (!r.allowed && r.status === 409) deniedMs = performance.now() - t0;
      else await sleep(POLL_MS);
    }
    await vwc;
    if (Number.isNaN(deniedMs)) errors.push(`trial ${i}: no denied DELETE within ${opts.timeoutMs} ms`);
    trials.push({ vwcMs, deniedMs, offMs });
    env.log(
      `rule lookup=${mode} trial ${i + 1}/${opts.trials}: VWC after ${vwcMs.toFixed(0)} ms, denied after ${deniedMs.toFixed(0)} ms`,
    );
  }
  await setProtection(env, true);
  const pick = (k: keyof RuleTrial) => summarize(trials.map((t) => t[k]).filter((v) => !Number.isNaN(v)));
  return {
    mode,
    trials,
    summary: { vwcMs: pick("vwcMs"), deniedMs: pick("deniedMs"), offMs: pick("offMs") },
    pollIntervalMs: POLL_MS,
    errors,
  };
}
