// `npm run soak`: a Jepsen-style soak of the product on a real two-shard kcp. Flags: --duration=30m, --seed=N,
// --lookup=index|live, --workers=N, --window=5s, --bound=120s, --fault-every=20s-40s, --no-faults,
// --careless-every=20s-40s, --no-careless, --hostile-every=20s-60s, --hostile-hold=10s-60s, --no-hostile,
// --no-hostile-provider, --no-status-policy, --weakened, --weakened-status, --history=FILE, and
// --check=FILE to check a saved history again without kcp. Exits 1 on any violation (and writes the history, and
// keeps the logs of kcp and the binaries next to it).
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { check } from "./checker.ts";
import { SoakEnv } from "./env.ts";
import type { History } from "./history.ts";
import { summary } from "./report.ts";
import { runSoak, type SoakOptions } from "./soak.ts";

export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`--${flag}: "${text}" is not a duration such as 90s, 30m or 500ms`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
  return Math.round(Number(m[1]) * unit);
}

function parseRange(text: string, flag: string): [number, number] {
  const [a, b = a] = text.split("-");
  const range: [number, number] = [parseDuration(a ?? "", flag), parseDuration(b ?? "", flag)];
  if (range[0] > range[1]) throw new Error(`--${flag}: "${text}": the lower end is above the upper`);
  return range;
}

function parseIntFlag(text: string, flag: string, min: number): number {
  if (!/^\d+$/.test(text) || Number(text) < min) throw new Error(`--${flag}: "${text}" is not a whole number ≥ ${min}`);
  return Number(text);
}

export function parseSoakArgs(argv: string[]): Omit<SoakOptions, "log"> & { history?: string; check?: string } {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      duration: { type: "string", default: "10m" },
      seed: { type: "string" },
      workers: { type: "string", default: "4" },
      window: { type: "string", default: "5s" },
      bound: { type: "string", default: "120s" },
      "fault-every": { type: "string", default: "15s-35s" },
      "rule-churn-every": { type: "string", default: "15s-30s" },
      "no-faults": { type: "boolean", default: false },
      "careless-every": { type: "string", default: "20s-40s" },
      "no-careless": { type: "boolean", default: false },
      "hostile-every": { type: "string", default: "20s-60s" },
      "hostile-hold": { type: "string", default: "10s-60s" },
      "no-hostile": { type: "boolean", default: false },
      "no-hostile-provider": { type: "boolean", default: false },
      "no-status-policy": { type: "boolean", default: false },
      "weakened-status": { type: "boolean", default: false },
      "no-workspace-delete": { type: "boolean", default: false },
      weakened: { type: "boolean", default: false },
      history: { type: "string" },
      check: { type: "string" },
      lookup: { type: "string", default: "index" },
    },
  });
  if (values.lookup !== "index" && values.lookup !== "live")
    throw new Error(`--lookup: "${values.lookup}" is not index or live`);
  return {
    seed: values.seed !== undefined ? parseIntFlag(values.seed, "seed", 0) : Math.floor(Math.random() * 2 ** 31),
    durationMs: parseDuration(values.duration, "duration"),
    workers: parseIntFlag(values.workers, "workers", 1),
    windowMs: parseDuration(values.window, "window"),
    boundMs: parseDuration(values.bound, "bound"),
    faultEveryMs: parseRange(values["fault-every"], "fault-every"),
    ruleChurnEveryMs: parseRange(values["rule-churn-every"], "rule-churn-every"),
    faults: !values["no-faults"],
    careless: !values["no-careless"],
    carelessEveryMs: parseRange(values["careless-every"], "careless-every"),
    hostile: !values["no-hostile"],
    hostileEveryMs: parseRange(values["hostile-every"], "hostile-every"),
    hostileHoldMs: parseRange(values["hostile-hold"], "hostile-hold"),
    deleteWorkspace: !values["no-workspace-delete"],
    hostileProvider: !values["no-hostile-provider"],
    statusPolicy: !values["no-status-policy"],
    weakened: values.weakened,
    weakenedStatus: values["weakened-status"],
    lookup: values.lookup,
    ...(values.history !== undefined ? { history: values.history } : {}),
    ...(values.check !== undefined ? { check: values.check } : {}),
  };
}

/** Copies the run's logs (kcp's shards, front-proxy, cache server, webhook replicas, controller) before teardown. */
function keepLogs(env: SoakEnv, dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(env.kcp.rootDir)) {
    if (f.endsWith(".log")) copyFileSync(path.join(env.kcp.rootDir, f), path.join(dir, f));
  }
  return dir;
}

async function main(): Promise<number> {
  let opts: ReturnType<typeof parseSoakArgs>;
  try {
    opts = parseSoakArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`soak: ${(err as Error).message}\n`);
    return 2;
  }
  if (opts.check) {
    const h = JSON.parse(readFileSync(opts.check, "utf8")) as History;
    const r = check(h);
    process.stdout.write(`${summary(h, r)}\n`);
    return r.violations.length > 0 ? 1 : 0;
  }
  const log = (line: string): void =>
    void process.stdout.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  log(`seed ${opts.seed} (replay the workload with --seed=${opts.seed})`);
  const env = await SoakEnv.start(log, opts.lookup);
  try {
    const { history, result } = await runSoak(env, { ...opts, log });
    process.stdout.write(`${summary(history, result)}\n`);
    const file = opts.history ?? (result.violations.length > 0 ? `soak-history-${opts.seed}.json` : undefined);
    if (file) {
      writeFileSync(file, JSON.stringify(history));
      log(`history written to ${file} (check it again: node tools/soak/run.ts --check=${file})`);
    }
    if (file && result.violations.length > 0)
      log(`logs of kcp and both binaries kept in ${keepLogs(env, `${file}.logs`)}`);
    return result.violations.length > 0 ? 1 : 0;
  } catch (err) {
    process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n${env.logTails()}\n`);
    return 2;
  } finally {
    await env.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
