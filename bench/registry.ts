// `node --expose-gc bench/registry.ts`: one rule change among many rules on one protected (provider, group/resource), the case
// that took 0.9 s of the webhook's event loop at 8,000 rules when the registry was rebuilt from scratch on every rule
// event (issue 30). Times the registry's update for one changed rule (observe + settle, as the rule source calls
// them: the whole list handed over) and for a status-only write; prints the median of several runs; a benchmark,
// not a test (no assertion on time). Target: < 5 ms for one change among 10,000 rules.
//
//   --rules=10000   rules on the one target   --runs=21   timed runs (after one warm-up)   --old   also a fresh build
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { Resolution } from "../src/kcp/workspaces.ts";
import { logicalClusterName } from "../src/api/wire.ts";
import { DEFAULT_MAX_RULES_PER_WORKSPACE } from "../src/api/rule-cap.ts";
import { buildRegistry, RegistryState } from "../src/webhook/rules/registry.ts";
import { dependencyRule } from "../tools/kcp/rules.ts";
import { summarize } from "./stats.ts";

const { values } = parseArgs({
  options: {
    rules: { type: "string", default: "10000" },
    runs: { type: "string", default: "21" },
    old: { type: "boolean", default: false },
  },
});
const n = Number(values.rules);
const runs = Number(values.runs);
const resolutions = new Map<string, Resolution>([["root:network", { ok: true, cluster: logicalClusterName("net") }]]);

/** Rule i of workspace ws-<i / 100> (100 authors' worth of rules each, under the default cap), all on VPCs. */
function rule(i: number, field = ".spec.vpcRef.name", status?: unknown): Record<string, unknown> {
  const obj = dependencyRule(`r-${i}`, [{ path: "root:network", group: "network.test.io", resource: "vpcs", field }], {
    cluster: `ws-${Math.floor(i / 100)}`,
    generation: 1,
  }) as Record<string, unknown>;
  const meta = obj["metadata"] as Record<string, unknown>;
  meta["uid"] = `uid-${i}`;
  meta["creationTimestamp"] = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  return status === undefined ? obj : { ...obj, status };
}

/** Wall and CPU time (this process's, user + system): on a loaded machine the CPU time is the figure to read. */
function time(what: string, fn: (run: number) => unknown): void {
  fn(-1); // warm-up
  const samples: number[] = [];
  const cpu: number[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < runs; i++) {
    gc?.(); // run with --expose-gc: a collection left over from setting up is not timed
    const start = performance.now();
    const used = process.cpuUsage();
    fn(i);
    const d = process.cpuUsage(used);
    samples.push(performance.now() - start);
    cpu.push((d.user + d.system) / 1000);
  }
  const s = summarize(samples);
  const c = summarize(cpu);
  const ms = (x: number): string => x.toFixed(2).padStart(8);
  console.log(`${what.padEnd(62)} CPU median ${ms(c.p50)} ms  wall median ${ms(s.p50)} ms  max ${ms(s.max)} ms`);
}

const rules = Array.from({ length: n }, (_, i) => rule(i));
const state = new RegistryState({ maxRulesPerWorkspace: DEFAULT_MAX_RULES_PER_WORKSPACE });
state.observe(rules);
state.settle(resolutions);
console.log(`node ${process.version}, ${n} rules on one (provider, group/resource), ${runs} runs`);
const update = (): void => {
  state.observe(rules);
  state.settle(resolutions);
};
time(`one rule changed among ${n} (its field path)`, (run) => {
  rules[n >> 1] = rule(n >> 1, run % 2 === 0 ? ".spec.otherRef.name" : ".spec.vpcRef.name");
  update();
});
time(`one rule added among ${n}, then removed`, () => {
  rules.push(rule(n));
  update();
  rules.pop();
  update();
});
time(`status-only write of one rule among ${n} (nothing changes)`, (run) => {
  rules[7] = rule(7, ".spec.vpcRef.name", { conditions: [], run });
  update();
});
if (values.old) time(`fresh build of all ${n} (what every event cost before)`, () => buildRegistry(rules, resolutions));
