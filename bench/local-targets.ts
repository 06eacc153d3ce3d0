// `node bench/local-targets.ts`: what local-target protection costs the controller and the webhook over many consumer
// workspaces, without kcp. Drives the controller's real planner (src/controller/local-targets.ts, as
// local-targets-sync.ts calls it) against one dependent export's consumers played by bench/local-targets-kcp.ts, and
// the webhook's real rule registry (RegistryState) with the same rules. Per pass: the writes planned and applied, the
// CPU of reading the list (JSON.parse of the stored configurations, as a list response) and of planning (median of
// --runs plans of the same view: planning is pure), and what is left where the controller cannot reach. Then the heap
// of the controller's planning state and of the registry (forced collections, `--expose-gc`, as index-heap.ts), and
// the steady pass at other sizes with the planner's comparisons counted. A benchmark: nothing asserts a time.
//
//   --consumers=1000 --declined=100   consumer workspaces of the export, and how many of them declined the claim
//   --rules=4                          local-target rules on the export (Endpoints naming Secrets and a ConfigMap)
//   --runs=5   plans timed per pass     --scale=1000,2000,4000   consumers for the scaling rows (10% declined)
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { parseRule, type ParsedRule } from "../src/api/rule.ts";
import { logicalClusterName } from "../src/api/wire.ts";
import type { ExistingConfiguration } from "../src/controller/actions.ts";
import {
  coverageOf,
  localConfiguration,
  localTargetSets,
  planLocalWrites,
  type DependentExport,
  type ExportView,
} from "../src/controller/local-targets.ts";
import { exportsToVisit } from "../src/controller/local-targets-visits.ts";
import { RegistryState } from "../src/webhook/rules/registry.ts";
import { dependencyRule } from "../tools/kcp/rules.ts";
import { ExportConsumers, type ApplyCounts } from "./local-targets-kcp.ts";
import { summarize } from "./stats.ts";

const PROVIDER = "2arcprovider0000";
const URL = "https://dependency-webhook.dependency-system.svc:9443";
const CA = Buffer.from("x".repeat(820)).toString("base64"); // a 1.1 KB CA bundle, as a cluster issuer's
const FIELDS = [".spec.secretRef.name", ".spec.tls.secretRef.name", ".spec.artifacts[*].credentialsRef.name"];

/** Rule i on the export's Endpoints: rule 1 names a ConfigMap, the others Secrets, each at its own field path. */
export function ruleObject(i: number, resource = i === 1 ? "configmaps" : "secrets", field?: string): unknown {
  const obj = dependencyRule(
    `endpoint-refs-${i}`,
    [{ local: true, resource, field: field ?? (i === 1 ? ".spec.configMapRef.name" : FIELDS[i % FIELDS.length]!) }],
    { cluster: PROVIDER, generation: 1, dependent: { group: "arc.opendefense.cloud", resource: "endpoints" } },
  ) as { metadata: Record<string, unknown> };
  obj.metadata["uid"] = `uid-rule-${i}-${resource}-${field ?? ""}`;
  obj.metadata["creationTimestamp"] = "2026-11-28T00:00:00Z";
  return obj;
}

const consumer = (i: number) => logicalClusterName(`2c${String(i).padStart(14, "0")}`);
const cpuMs = (fn: () => void): number => {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
};

/**
 * What sync() does with one view per export, minus the I/O: the writes, and the coverage the status reports. The
 * recorded exports (the export is recorded at its first pass) are visited too, so a pass without rules prunes.
 */
function plan(rules: readonly ParsedRule[], view: ExportView, recorded: readonly DependentExport[] = []) {
  return exportsToVisit(localTargetSets(rules), recorded).map(({ set }) => {
    const actions = planLocalWrites(set && localConfiguration(set, URL, CA), view);
    return { actions, coverage: set ? coverageOf(set, view, new Set()) : undefined };
  });
}

interface PassRow {
  step: string;
  planned: number;
  applied: ApplyCounts;
  readMs: number;
  planMs: number;
  covered: number;
  /** Configurations in consumers the plan does not reach (a consumer that declined after accepting keeps its own). */
  leftBehind: number;
}

function pass(
  step: string,
  rules: readonly ParsedRule[],
  kcp: ExportConsumers,
  runs: number,
  recorded: readonly DependentExport[] = [],
): PassRow {
  let view: ExportView = { consumers: new Map(), existing: [], claimed: true };
  const readMs = cpuMs(() => (view = kcp.view()));
  let plans = plan(rules, view, recorded);
  const planMs = summarize(Array.from({ length: runs }, () => cpuMs(() => (plans = plan(rules, view, recorded))))).p50;
  const actions = plans.flatMap((p) => p.actions);
  const applied = kcp.apply(actions);
  const covered = plans[0]?.coverage?.kind === "read" ? plans[0].coverage.covered : 0;
  const reached = plans.length > 0 ? kcp.view().existing.length : 0;
  return { step, planned: actions.length, applied, readMs, planMs, covered, leftBehind: kcp.count() - reached };
}

export function consumersOf(n: number, declined: number): ExportConsumers {
  const kcp = new ExportConsumers();
  for (let i = 0; i < n; i++) kcp.consumers.set(consumer(i), declined === 0 || i % Math.round(n / declined) !== 0);
  return kcp;
}

function steps(o: { consumers: number; declined: number; rules: number; runs: number }): PassRow[] {
  const objects = Array.from({ length: o.rules }, (_, i) => ruleObject(i));
  const parsed = () => objects.map((r) => parseRule(r)!);
  const kcp = consumersOf(o.consumers, o.declined);
  const rows = [pass("first pass", parsed(), kcp, o.runs), pass("steady state", parsed(), kcp, o.runs)];
  kcp.consumers.set(consumer(o.consumers), true);
  rows.push(pass("one consumer added (accepts)", parsed(), kcp, o.runs));
  kcp.consumers.set(consumer(1), false);
  rows.push(pass("one consumer declines", parsed(), kcp, o.runs));
  objects[0] = ruleObject(0, "secrets", ".spec.defaults.srcSecretRef.name");
  rows.push(pass("one rule's field path changes", parsed(), kcp, o.runs));
  objects[1] = ruleObject(1, "secrets");
  rows.push(pass("one rule: configmaps → secrets", parsed(), kcp, o.runs));
  rows.push(pass("steady state", parsed(), kcp, o.runs));
  rows.push(
    pass(
      "every rule deleted",
      [],
      kcp,
      o.runs,
      localTargetSets(parsed()).map((set) => set.export),
    ),
  );
  return rows;
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc");
  for (let i = 0; i < 4; i++) gc();
}

function heapOf(make: () => unknown): { bytes: number; held: unknown } {
  collect();
  const h0 = v8.getHeapStatistics().used_heap_size;
  const held = make();
  collect();
  return { bytes: v8.getHeapStatistics().used_heap_size - h0, held };
}

/** Heap of one steady pass's planning state (the view read, the configuration, the plan) and of the registry. */
function heaps(o: { consumers: number; declined: number; rules: number }) {
  const objects = Array.from({ length: o.rules }, (_, i) => ruleObject(i));
  const rules = objects.map((r) => parseRule(r)!);
  const kcp = consumersOf(o.consumers, o.declined);
  kcp.apply(plan(rules, kcp.view()).flatMap((p) => p.actions));
  const planning = heapOf(() => {
    const view = kcp.view();
    return { view, plans: plan(rules, view) };
  });
  const build = (input: unknown[] = objects) => {
    const state = new RegistryState({});
    state.observe(input);
    state.settle(new Map());
    return state;
  };
  build(); // warm-up: the code compiled on first use is heap too, and not the registry's
  const registry = heapOf(build);
  const empty = heapOf(() => build([]));
  const configBytes = JSON.stringify(kcp.view().existing[0]?.object ?? {}).length;
  return {
    planningBytes: planning.bytes,
    registryBytes: registry.bytes,
    emptyRegistryBytes: empty.bytes,
    configBytes,
    stored: kcp.count(),
  };
}

/** The steady pass at `n` consumers: plan CPU and how often planActions compared a consumer's cluster. */
function scaleRow(n: number, rules: number, runs: number) {
  const parsed = Array.from({ length: rules }, (_, i) => parseRule(ruleObject(i))!);
  const kcp = consumersOf(n, n / 10);
  kcp.apply(plan(parsed, kcp.view()).flatMap((p) => p.actions));
  const view = kcp.view();
  const planMs = summarize(Array.from({ length: runs }, () => cpuMs(() => plan(parsed, view)))).p50;
  let reads = 0;
  const counted: ExistingConfiguration[] = view.existing.map((e) => ({
    object: e.object,
    get cluster() {
      reads++;
      return e.cluster;
    },
  }));
  const planned = plan(parsed, { ...view, existing: counted }).flatMap((p) => p.actions).length;
  return { consumers: n, accepting: view.existing.length, planned, planMs, clusterReads: reads };
}

function print(rows: PassRow[], heap: ReturnType<typeof heaps>, scale: ReturnType<typeof scaleRow>[]): void {
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
  const pad = (s: unknown, n: number) => String(s).padStart(n);
  console.log("pass                            planned  create update delete refused  read ms  plan ms  covered  left");
  for (const r of rows) {
    const a = r.applied;
    console.log(
      `${r.step.padEnd(30)}  ${pad(r.planned, 7)}  ${pad(a.create, 6)} ${pad(a.update, 6)} ${pad(a.delete, 6)} ` +
        `${pad(a.refused, 7)}  ${pad(r.readMs.toFixed(1), 7)}  ${pad(r.planMs.toFixed(1), 7)}  ` +
        `${pad(r.covered, 7)}  ${pad(r.leftBehind, 4)}`,
    );
  }
  console.log(
    `\none configuration as stored: ${kib(heap.configBytes)} of JSON; ${heap.stored} stored\n` +
      `controller's planning state of a steady pass (view read, configuration, plan): heap ${kib(heap.planningBytes)}\n` +
      `webhook's rule registry with the local-target rules: heap ${kib(heap.registryBytes)}, ` +
      `empty ${kib(heap.emptyRegistryBytes)} (no input of it names a consumer)`,
  );
  console.log("\nsteady pass by size   consumers  accepting  planned  plan ms  cluster reads in planActions");
  for (const s of scale)
    console.log(
      `${" ".repeat(20)}  ${pad(s.consumers, 9)}  ${pad(s.accepting, 9)}  ${pad(s.planned, 7)}  ` +
        `${pad(s.planMs.toFixed(1), 7)}  ${pad(s.clusterReads, 12)}`,
    );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!(globalThis as { gc?: unknown }).gc) {
    execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
    });
  } else {
    const { values } = parseArgs({
      options: {
        consumers: { type: "string", default: "1000" },
        declined: { type: "string", default: "100" },
        rules: { type: "string", default: "4" },
        runs: { type: "string", default: "5" },
        scale: { type: "string", default: "1000,2000,4000" },
      },
    });
    const o = {
      consumers: Number(values.consumers),
      declined: Number(values.declined),
      rules: Number(values.rules),
      runs: Number(values.runs),
    };
    console.log(`node ${process.version}, ${o.consumers} consumers (${o.declined} declined), ${o.rules} rules`);
    const rows = steps(o);
    const heap = heaps(o);
    print(
      rows,
      heap,
      values.scale.split(",").map((n) => scaleRow(Number(n), o.rules, o.runs)),
    );
  }
}
