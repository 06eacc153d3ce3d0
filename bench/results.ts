// What a run produced, as written to the JSON file; rendering and the targets both read it.
import type { LookupMode } from "../tools/kcp/topology.ts";
import type { DelaySeries } from "./delay.ts";
import type { FinalizerTeardownRow } from "./finalizer-teardown.ts";
import { type MachineFacts } from "./machine.ts";
import type { IndexMemoryResult } from "./index-memory.ts";
import type { LatencyResult } from "./latency.ts";
import type { LocalTargetsResult } from "./lt-kcp.ts";
import type { MemorySnapshot } from "./memory.ts";
import type { RuleResult } from "./rule.ts";
import type { TeardownResult } from "./teardown.ts";

export interface BenchReport {
  date: string;
  command: string;
  mode: "smoke" | "full" | "custom";
  /** The webhook's lookup modes compared in this run. */
  lookupModes: LookupMode[];
  machine: MachineFacts & { loadAverageAtEnd: number[] };
  notes: string[];
  options: Record<string, unknown>;
  durationS: number;
  latency?: LatencyResult[];
  teardown?: TeardownResult[];
  /** Teardown with a slow backend: kcp's deletion with and without protection, and the teardown command. */
  finalizerTeardown?: FinalizerTeardownRow[];
  delay?: DelaySeries[];
  rule?: RuleResult[];
  memory?: MemorySnapshot[];
  indexMemory?: IndexMemoryResult;
  localTargets?: LocalTargetsResult;
}

/** Everything that went wrong in a run (a non-empty list makes the run exit 1). */
export function errorsOf(rep: BenchReport): string[] {
  return [
    ...(rep.latency ?? []).flatMap((l) => l.errors.map((e) => `latency N=${l.n} lookup=${l.mode}: ${e}`)),
    ...(rep.teardown ?? []).flatMap((t) => (t.error ? [`teardown N=${t.n} lookup=${t.mode}: ${t.error}`] : [])),
    ...(rep.finalizerTeardown ?? []).flatMap((t) =>
      t.error ? [`finalizer teardown ${t.scope} ${t.strategy} N=${t.pairs}: ${t.error}`] : [],
    ),
    ...(rep.delay ?? []).flatMap((d) => d.errors.map((e) => `index delay lookup=${d.mode} ${d.load}: ${e}`)),
    ...(rep.rule ?? []).flatMap((r) => r.errors.map((e) => `rule lookup=${r.mode}: ${e}`)),
    ...(rep.indexMemory?.errors ?? []).map((e) => `index memory: ${e}`),
    ...(rep.localTargets?.errors ?? []).map((e) => `local targets: ${e}`),
  ];
}
