// `npm run bench` (node bench/run.ts): what deletion protection costs, measured on a real kcp with the controller
// and the webhook as processes. Progress goes to stderr, the tables to stdout, the raw samples to a JSON file.
//
//   --smoke                 tiny sizes, runs in a few minutes (the test suite runs it so the benchmark never rots)
//   --only=latency,teardown,index-delay,rule,memory,index-memory
//   --lookup=index,live     the webhook's lookup modes compared (restarted between them on the same kcp)
//   --n=0,100,1000,10000    dependents per latency step       --deletes=200  allowed DELETEs per N, mode and on/off
//   --denied=200            denied DELETEs per N and mode     --lists=50     bare LISTs per N and mode
//   --after-write=50        DELETEs and LISTs per N timed right after a write    --settle-ms=150  pause after writes
//   --large-n=50000         from this N on, few whole LISTs of the VMs: 4 timed, none after a write, warm-up one page
//   --warm-reviews=500      untimed dry-run DELETEs through kcp before each block (a warmed webhook, not a fresh
//                           process whose functions V8 has not optimized yet; 0 = one, as before)
//   --page-sizes=500,1000,2000,5000 --page-size-lists=10      the webhook's lookup code by page size, every N > 0
//   --teardown=100,500,2000 VPC/VM pairs per namespace        --teardown-timeout=600 seconds per teardown
//   --ftd-pairs=2000        pairs whose VMs hold a finalizer, taken down by kcp (webhook off, on) and by the teardown
//   --ftd-finalizer-ms=5000 the simulated backend clears it this long after the delete (0 pairs = skip)
//   --ftd-concurrency=32    the teardown command's --concurrency in those rows
//   --ftd-scopes=namespace,workspace   which of those rows: one namespace, a whole consumer workspace, or both
//   --delay-samples=50      index-delay samples per mode on a quiet kcp
//   --delay-load=2000       pairs torn down while index-delay samples are taken (index mode; 0 = skip)
//   --trials=20             rule-to-protection trials per mode --rules=100   rules loaded for the memory reading
//   --mem-workspaces=100 --mem-per-workspace=1000             index-memory: consumer workspaces and VMs in each
//   --mem-settle-ms=10000   pause before each index-memory RSS reading
//   --only=local-targets    (only when named, or by --smoke) local-target protection over many consumer workspaces (bench/lt-kcp.ts):
//   --lt-consumers=1000 --lt-declining=10   consumer workspaces binding the export, and how many decline the claim
//   --lt-resync=10          the controller's --resync-period (s) in that phase, so steady passes come quickly
//   --concurrency=24        POSTs in flight while creating    --out=bench/results   directory for the JSON
//   --kcp-arg=--flag=value  extra `kcp start` flag (repeatable), e.g. a feature gate to compare against
//   --webhook-arg=--flag=v  extra webhook flag (repeatable), e.g. a larger index budget for N ≥ 20,000 in one workspace
//   --binaries=dist|src     dist (default): compile src/ (npm run build) and run the JavaScript the image ships;
//                           src: run the TypeScript entry points (Node strips types at load, which costs memory)
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import { runDelay } from "./delay.ts";
import { runFinalizerTeardown } from "./finalizer-teardown.ts";
import { restartWebhook, startBench, stopBench, useLookup, type BenchEnv } from "./env.ts";
import { runIndexMemory } from "./index-memory.ts";
import { LATENCY_NS, runLatency } from "./latency.ts";
import { runLocalTargets } from "./lt-kcp.ts";
import { machineFacts } from "./machine.ts";
import { snapshot, withRules, type MemorySnapshot } from "./memory.ts";
import { notesFor, otherKcps } from "./notes.ts";
import { benchArgs } from "./options.ts";
import { render } from "./report.ts";
import { errorsOf, type BenchReport } from "./results.ts";
import { runRule } from "./rule.ts";
import { runTeardown } from "./teardown.ts";

const { values, preset, opt, ints, int, only, modes, concurrency, from, custom } = benchArgs();

const log = (line: string): void =>
  void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** Table 2 (kcp's namespace deletion with and without the webhook) and table 2b (with a slow backend). */
async function teardownPhases(env: BenchEnv, report: BenchReport): Promise<void> {
  const timeoutMs = int("teardown-timeout") * 1000;
  if (ints(opt("teardown")).length > 0)
    report.teardown = await runTeardown(env, { ns: ints(opt("teardown")), concurrency, timeoutMs, modes });
  if (int("ftd-pairs") > 0)
    report.finalizerTeardown = await runFinalizerTeardown(env, {
      pairs: int("ftd-pairs"),
      finalizerMs: int("ftd-finalizer-ms"),
      scopes: opt("ftd-scopes")
        .split(",")
        .filter((v) => v === "namespace" || v === "workspace"),
      concurrency,
      teardownConcurrency: int("ftd-concurrency"),
      timeoutMs,
      mode: modes.includes("index") ? "index" : modes[0]!,
    });
}

/** Table 8: local targets over `--lt-consumers` consumer workspaces (named in --only only). */
function localTargetsPhase(env: BenchEnv): ReturnType<typeof runLocalTargets> {
  const [consumers, declining, resyncS] = [int("lt-consumers"), int("lt-declining"), int("lt-resync")];
  return runLocalTargets(env, { consumers, declining, resyncS, concurrency, timeoutMs: 1_800_000 });
}

/** The latency phase (bench/latency.ts), with the memory phase's snapshot after the largest N when both run. */
async function latencyPhase(env: BenchEnv, report: BenchReport, memory: MemorySnapshot[]): Promise<void> {
  const max = Math.max(...ints(opt("n")));
  report.latency = await runLatency(env, {
    ns: ints(opt("n")),
    deletes: int("deletes"),
    denied: int("denied"),
    lists: int("lists"),
    largeN: int("large-n"),
    warmReviews: int("warm-reviews"),
    afterWrite: int("after-write"),
    settleMs: int("settle-ms"),
    pageSizes: ints(opt("page-sizes")),
    pageSizeLists: int("page-size-lists"),
    concurrency,
    modes,
    afterStep: async (r) => {
      if (only.has("memory") && r.n === max)
        memory.push(await snapshot(env, `after checking ${max} dependents per DELETE`));
    },
  });
  // The latency namespace is no longer needed; drop it so later phases run on a lighter kcp.
  await env.consumer.request("DELETE", `/api/v1/namespaces/${LATENCY_NS}`).catch(() => undefined);
}

async function phases(env: BenchEnv, report: BenchReport): Promise<void> {
  const memory: MemorySnapshot[] = [];
  if (only.has("memory"))
    for (const mode of modes) {
      await useLookup(env, mode);
      memory.push(await snapshot(env, "idle, 1 rule", 5_000));
    }
  if (only.has("latency")) await latencyPhase(env, report, memory);
  if (only.has("teardown")) await teardownPhases(env, report);
  if (only.has("index-delay")) {
    report.delay = await runDelay(env, {
      samples: int("delay-samples"),
      loadPairs: int("delay-load"),
      modes,
      concurrency,
      timeoutMs: int("teardown-timeout") * 1000,
    });
  }
  if (only.has("rule")) report.rule = await runRule(env, { trials: int("trials"), timeoutMs: 120_000, modes });
  if (only.has("memory")) {
    const total = int("rules");
    const removeRules = await withRules(env, total, 8);
    memory.push(await snapshot(env, `${total} rules loaded`, 5_000));
    await removeRules();
    report.memory = memory;
  }
  if (only.has("local-targets")) report.localTargets = await localTargetsPhase(env);
  // Last: it leaves its workspaces and dependents behind (the run ends with kcp).
  if (only.has("index-memory") && modes.includes("index")) {
    report.indexMemory = await runIndexMemory(env, {
      workspaces: int("mem-workspaces"),
      perWorkspace: int("mem-per-workspace"),
      concurrency,
      settleMs: int("mem-settle-ms"),
      timeoutMs: 600_000,
      inProcess: !values.smoke, // about 40 s of child processes: not in the test suite's smoke run
    });
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  if (from === "dist") {
    log("compiling src/ to dist/ (tsconfig.build.json), the JavaScript the container image runs");
    execFileSync(
      process.execPath,
      [path.join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
      {
        cwd: REPO_ROOT,
        stdio: "inherit",
      },
    );
  }
  const env = await startBench(log, values["kcp-arg"] ?? [], modes[0], from);
  try {
    if (values["webhook-arg"]) {
      // startBench started the webhook with the defaults: start it again with the extra flags, before any phase.
      env.bins.webhookArgs.push(...values["webhook-arg"]);
      log(`restarting the webhook with ${values["webhook-arg"].join(" ")}`);
      await restartWebhook(env, modes[0]!);
    }
    const facts = await machineFacts(env);
    const report: BenchReport = {
      date: new Date().toISOString(),
      command: `node bench/run.ts ${process.argv.slice(2).join(" ")}`.trim(),
      mode: values.smoke ? "smoke" : custom ? "custom" : "full",
      lookupModes: modes,
      machine: { ...facts, loadAverageAtEnd: [] },
      notes: notesFor(otherKcps(env.kcp.process.pid), from, modes),
      options: { ...preset, ...values, concurrency },
      durationS: 0,
    };
    await phases(env, report);
    report.machine.loadAverageAtEnd = os.loadavg();
    report.durationS = (Date.now() - started) / 1000;
    const file = path.join(values.out, `${report.date.replace(/[:.]/g, "-")}.json`);
    mkdirSync(values.out, { recursive: true });
    writeFileSync(file, JSON.stringify(report, null, 2) + "\n");
    process.stdout.write(render(report) + "\n\n" + `raw samples: ${file}\n`);
    return errorsOf(report).length > 0 ? 1 : 0;
  } catch (err) {
    process.stderr.write(`${env.bins.logTails(30)}\n--- kcp log tail ---\n${env.kcp.logTail(30)}\n`);
    throw err;
  } finally {
    await stopBench(env);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
