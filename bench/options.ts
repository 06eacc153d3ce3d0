// The benchmark's flags: the full and smoke presets, and what the run makes of the command line.
import path from "node:path";
import { parseArgs } from "node:util";
import { REPO_ROOT } from "../tools/kcp/harness.ts";
import type { BinariesFrom, LookupMode } from "../tools/kcp/topology.ts";

export const PHASES = ["latency", "teardown", "index-delay", "rule", "memory", "index-memory"] as const;
/**
 * Phases the full run takes only when --only names them: local-targets creates 1,000 workspaces, too long for it. The
 * smoke run (6 workspaces) takes them too, so that they do not rot.
 */
export const OPTIONAL_PHASES = ["local-targets"] as const;
const MODES: readonly LookupMode[] = ["index", "live"];
export type Phase = (typeof PHASES)[number] | (typeof OPTIONAL_PHASES)[number];

export const FULL = {
  n: "0,100,1000,10000",
  deletes: "200",
  denied: "200",
  lists: "50",
  "large-n": "50000",
  "warm-reviews": "500",
  "after-write": "50",
  "settle-ms": "150",
  "page-sizes": "500,1000,2000,5000",
  "page-size-lists": "10",
  teardown: "100,500,2000",
  "teardown-timeout": "600",
  "ftd-pairs": "2000",
  "ftd-finalizer-ms": "5000",
  "ftd-concurrency": "32",
  "ftd-scopes": "namespace,workspace",
  trials: "20",
  rules: "100",
  lookup: "index,live",
  "delay-samples": "50",
  "delay-load": "2000",
  "mem-workspaces": "100",
  "mem-per-workspace": "1000",
  "mem-settle-ms": "10000",
  "lt-consumers": "1000",
  "lt-declining": "10",
  "lt-resync": "10",
};
const SMOKE: typeof FULL = {
  n: "0,20",
  deletes: "4",
  denied: "2",
  lists: "4",
  "large-n": "50000",
  "warm-reviews": "5",
  "after-write": "2",
  "settle-ms": "150",
  "page-sizes": "10,500",
  "page-size-lists": "1",
  teardown: "10",
  "teardown-timeout": "120",
  "ftd-pairs": "5",
  "ftd-finalizer-ms": "1000",
  "ftd-concurrency": "8",
  // Workspace rows cost a workspace and its bindings each; the smoke keeps to the namespace rows for time.
  "ftd-scopes": "namespace",
  trials: "2",
  rules: "5",
  lookup: "index,live",
  "delay-samples": "3",
  "delay-load": "10",
  "mem-workspaces": "3",
  "mem-per-workspace": "20",
  "mem-settle-ms": "2000",
  "lt-consumers": "6",
  "lt-declining": "1",
  "lt-resync": "5",
};

/** The command line read against the presets (parseArgs reads process.argv); throws on a bad value. */
export function benchArgs() {
  const { values } = parseArgs({
    options: {
      smoke: { type: "boolean", default: false },
      only: { type: "string" },
      "kcp-arg": { type: "string", multiple: true },
      "webhook-arg": { type: "string", multiple: true },
      concurrency: { type: "string", default: "24" },
      binaries: { type: "string", default: "dist" },
      out: { type: "string", default: path.join(REPO_ROOT, "bench/results") },
      ...Object.fromEntries(Object.keys(FULL).map((k) => [k, { type: "string" as const }])),
    },
  });

  const preset = values.smoke ? SMOKE : FULL;
  const given = values as unknown as Record<string, string | boolean | undefined>;
  const opt = (k: keyof typeof FULL): string => (given[k] as string | undefined) ?? preset[k];
  const ints = (s: string): number[] =>
    s
      .split(",")
      .filter((v) => v !== "")
      .map((v) => Number.parseInt(v, 10));
  const int = (k: keyof typeof FULL): number => ints(opt(k))[0] ?? 0;
  const byDefault: readonly Phase[] = values.smoke ? [...PHASES, ...OPTIONAL_PHASES] : PHASES;
  const only = new Set<Phase>((values.only?.split(",") ?? byDefault).map((p) => p.trim() as Phase));
  const known: readonly string[] = [...PHASES, ...OPTIONAL_PHASES];
  for (const p of only) if (!known.includes(p)) throw new Error(`--only: unknown phase "${p}" (${known.join(", ")})`);
  const modes = opt("lookup")
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "") as LookupMode[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`--lookup: unknown mode "${m}" (${MODES.join(", ")})`);
  if (modes.length === 0) throw new Error("--lookup: name at least one mode");
  const concurrency = Number.parseInt(values.concurrency, 10);
  const from = values.binaries as BinariesFrom;
  if (from !== "dist" && from !== "src") throw new Error(`--binaries: "dist" or "src", not "${values.binaries}"`);
  const custom =
    Object.keys(FULL).some((k) => given[k] !== undefined) ||
    values.only !== undefined ||
    values["kcp-arg"] !== undefined ||
    values["webhook-arg"] !== undefined;
  return { values, preset, opt, ints, int, only, modes, concurrency, from, custom };
}
