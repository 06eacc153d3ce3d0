// `node bench/cpu-profile.ts FILE.cpuprofile [--top=30] [--match=A,B]`: the top self-time functions of a V8 CPU
// profile (node --cpu-prof), and self time by where the code lives (our src/, each node_modules package, Node's own
// node: modules, V8 and native work such as TLS and GC). With --match=A,B, the inclusive time of every function whose
// name or file contains A (then B), i.e. what it costs with everything it calls.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { table } from "./table.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "30" }, match: { type: "string" } },
});

/** Microseconds of self time per node id: each sample's delta goes to the node it landed in. */
function selfTimes(p: Profile): Map<number, number> {
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  return self;
}

function where(url: string): string {
  if (url === "") return "(native: V8, GC, TLS, I/O)";
  if (url.startsWith("node:")) return "node: " + url.slice(5).split("/")[0];
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] ?? url;
  const ours = /\/(src|bench|test|tools)\/(.*)$/.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

const label = (n: ProfileNode) =>
  `${n.callFrame.functionName || "(anonymous)"} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

function sum(entries: Iterable<[string, number]>): [string, number][] {
  const out = new Map<string, number>();
  for (const [k, v] of entries) out.set(k, (out.get(k) ?? 0) + v);
  return [...out].sort((a, b) => b[1] - a[1]);
}

/** Inclusive time of the nodes matching `text` (a node under another matching node is counted once). */
function inclusive(p: Profile, self: Map<number, number>, text: string): [string, number][] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out: [string, number][] = [];
  const total = (n: ProfileNode): number =>
    (self.get(n.id) ?? 0) + (n.children ?? []).reduce((a, c) => a + total(byId.get(c) as ProfileNode), 0);
  const walk = (n: ProfileNode): void => {
    if (label(n).includes(text)) return void out.push([label(n), total(n)]);
    for (const c of n.children ?? []) walk(byId.get(c) as ProfileNode);
  };
  const root = p.nodes[0];
  if (root) walk(root);
  return sum(out);
}

function print(p: Profile): void {
  const self = selfTimes(p);
  const all = [...self.values()].reduce((a, b) => a + b, 0);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const idle = (n: ProfileNode) => ["(idle)", "(program)"].includes(n.callFrame.functionName);
  const busy = [...self].filter(([id]) => !idle(byId.get(id) as ProfileNode));
  const busyTotal = busy.reduce((a, [, v]) => a + v, 0);
  const pct = (v: number) => `${((100 * v) / busyTotal).toFixed(1)}%`;
  const rows = (xs: [string, number][], top: number) =>
    xs.slice(0, top).map(([k, v]) => [(v / 1000).toFixed(1), pct(v), k]);
  console.log(`profile: ${(all / 1e6).toFixed(2)} s sampled, ${(busyTotal / 1e6).toFixed(2)} s busy (idle left out)`);
  const top = Number(values.top);
  const fns = sum(busy.map(([id, v]) => [label(byId.get(id) as ProfileNode), v]));
  console.log("\nself time by function\n" + table(["ms", "busy", "function"], rows(fns, top)));
  const places = sum(busy.map(([id, v]) => [where((byId.get(id) as ProfileNode).callFrame.url), v]));
  console.log("\nself time by place\n" + table(["ms", "busy", "where"], rows(places, top)));
  for (const text of values.match?.split(",") ?? []) {
    const inc = inclusive(p, self, text);
    console.log(`\ninclusive time of '${text}'\n` + table(["ms", "busy", "function"], rows(inc, top)));
  }
}

for (const file of positionals) print(JSON.parse(readFileSync(file, "utf8")) as Profile);
