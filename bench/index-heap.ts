// What the dependents index holds on the heap, measured in one process without kcp: fills a ReferenceStore with
// dependents parsed from JSON text (as a watch delivers them), forces collections (`--expose-gc`) and reads
// `v8.getHeapStatistics()` and RSS before and after. Each shape runs in its own child process, so one shape's heap
// growth does not colour the next. The shapes vary the name length, the references per dependent, and whether
// the names are the dependent's own or shared by every dependent of its workspace: the heap per reference differs by
// which map holds it (a reverse-map entry and a name string each, or one entry in a shared name's key set).
//
//   node bench/index-heap.ts            the table, and the cost model's error per shape (model.ts's coefficients)
//   node bench/index-heap.ts --json     the rows as JSON (bench/index-memory.ts runs it this way)
//
// With `--ceiling-mib=N` it also fills one store past a ledger of N MiB (ceiling.ts) with many workspaces and
// reports the heap the store holds against the ledger's total: the ceiling's accuracy.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import { parseFieldPath, type FieldPath } from "../src/fieldpath/fieldpath.ts";
import { objectKey, type KubeObject } from "../src/kcp/informer.ts";
import { IndexLedger } from "../src/webhook/deletion/index/ceiling.ts";
import { ReferenceStore } from "../src/webhook/deletion/index/store.ts";

export interface HeapShape {
  label: string;
  workspaces: number;
  perWorkspace: number;
  /** References per dependent (1: `.spec.vpcRef.name`; more: a list path). */
  refs: number;
  nameLength: number;
  /** "own": every name is its dependent's alone; "shared": every dependent of a workspace names the same names. */
  names: "own" | "shared";
  /** Every dependent held unreadable (past its workspace's object budget): what a key kept to fail closed costs. */
  unreadable?: boolean;
}

export interface HeapRow extends HeapShape {
  dependents: number;
  references: number;
  heapBytes: number;
  rssBytes: number;
  /** What the store charged (store.ts, the cost model) for the same dependents; unreadable ones: what it counts. */
  chargedBytes: number;
}

/**
 * The first row is the kcp bench's layout (100 workspaces of 1,000: the index-memory phase) and the RSS target's row.
 * A hash table's cost per entry depends on how full it is (V8 doubles it when full: 50-100%), and 1,000 entries fill
 * 1,024 slots, the cheapest case; the other rows fill theirs about 72%, the average over sizes, and the cost model
 * (budget.ts, INDEX_COST) is fitted to them.
 */
export const SHAPES: HeapShape[] = [
  { label: "1 ref, 9 chars, kcp", workspaces: 100, perWorkspace: 1_000, refs: 1, nameLength: 9, names: "own" },
  { label: "1 ref, 9 chars", workspaces: 68, perWorkspace: 1_480, refs: 1, nameLength: 9, names: "own" },
  { label: "1 ref, 63 chars", workspaces: 68, perWorkspace: 1_480, refs: 1, nameLength: 63, names: "own" },
  { label: "1 ref, 253 chars", workspaces: 68, perWorkspace: 1_480, refs: 1, nameLength: 253, names: "own" },
  { label: "1 ref, shared", workspaces: 68, perWorkspace: 1_480, refs: 1, nameLength: 9, names: "shared" },
  { label: "10 refs, 4 chars", workspaces: 17, perWorkspace: 590, refs: 10, nameLength: 4, names: "own" },
  { label: "100 refs, 4 chars", workspaces: 17, perWorkspace: 59, refs: 100, nameLength: 4, names: "own" },
  { label: "1000 shared 4-char", workspaces: 1, perWorkspace: 1_475, refs: 1_000, nameLength: 4, names: "shared" },
  { label: "unreadable", workspaces: 68, perWorkspace: 1_480, refs: 1, nameLength: 9, names: "own", unreadable: true },
];

const path = (s: string): FieldPath => {
  const p = parseFieldPath(s);
  if (!p.ok) throw new Error(p.error);
  return p.path;
};
const ONE = path(".spec.vpcRef.name");
const MANY = path(".spec.nics[*].subnetRef.name");

/** A DNS-label name of exactly `length` characters, distinct for each `i`. */
function nameOf(i: number, length: number): string {
  const id = i.toString(36);
  return length <= id.length ? id.slice(-length) : "n".repeat(length - id.length) + id;
}

/** The JSON text of one dependent, as a watch event carries it. */
function dependentJson(shape: HeapShape, ws: number, j: number): string {
  const names = Array.from({ length: shape.refs }, (_, r) =>
    nameOf(shape.names === "shared" ? r : (ws * shape.perWorkspace + j) * shape.refs + r, shape.nameLength),
  );
  const spec =
    shape.refs === 1 ? { vpcRef: { name: names[0] } } : { nics: names.map((n) => ({ subnetRef: { name: n } })) };
  // Distinct names of 12 characters: JSON.parse interns strings of up to 10, which would share one name between
  // workspaces and hide what a dependent's own name costs.
  const metadata = {
    name: `vm-${String(ws).padStart(3, "0")}-${String(j).padStart(5, "0")}`,
    namespace: "bench-mem",
    annotations: { "kcp.io/cluster": `2x${String(ws).padStart(14, "0")}` },
    resourceVersion: String(1000 + j),
  };
  return JSON.stringify({ apiVersion: "compute.test.io/v1", kind: "VirtualMachine", metadata, spec });
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc");
  for (let i = 0; i < 4; i++) gc();
}

/** Fills `store` with the shape's dependents, one JSON.parse each. */
export function fill(store: ReferenceStore, shape: HeapShape, from = 0): void {
  for (let w = from; w < from + shape.workspaces; w++)
    for (let j = 0; j < shape.perWorkspace; j++) {
      const obj = JSON.parse(dependentJson(shape, w, j)) as KubeObject;
      store.set(objectKey(obj), obj);
    }
}

/** One shape, in this process: the heap and RSS the filled store adds, per the whole store. */
export function measure(shape: HeapShape): HeapRow {
  const store = new ReferenceStore([shape.refs === 1 ? ONE : MANY], undefined, {
    maxObjectsPerWorkspace: shape.unreadable ? 0 : 1e9,
    maxBytesPerWorkspace: 1e12,
    maxNamesPerObject: 1_000,
  });
  collect();
  const heap0 = v8.getHeapStatistics().used_heap_size;
  const rss0 = process.memoryUsage().rss;
  fill(store, shape);
  collect();
  const dependents = shape.workspaces * shape.perWorkspace;
  const unreadable = store.unreadable.names + store.unreadable.budget;
  if (store.size !== dependents || unreadable !== (shape.unreadable ? dependents : 0))
    throw new Error(`${shape.label}: ${store.size} stored, ${unreadable} unreadable`);
  return {
    ...shape,
    dependents,
    references: dependents * shape.refs,
    heapBytes: v8.getHeapStatistics().used_heap_size - heap0,
    rssBytes: process.memoryUsage().rss - rss0,
    chargedBytes: shape.unreadable ? store.heldBytes().unreadable : store.heldBytes().readable,
  };
}

export interface CeilingRow {
  label: string;
  ceilingBytes: number;
  /** What the ledger holds charged once the store is full. */
  chargedBytes: number;
  /** The heap the store adds, after forced collections. */
  heapBytes: number;
  dependents: number;
  unreadable: number;
  /** What the store says its unreadable dependents cost (INDEX_COST.unreadable and their characters). */
  unreadableBytes: number;
}

/** Twice the ceiling's worth of dependents over 40 workspaces, of either shape, against a ledger of `ceilingBytes`. */
export const CEILING_SHAPES: HeapShape[] = [
  { label: "100 refs, 40 ws", workspaces: 40, perWorkspace: 100, refs: 100, nameLength: 4, names: "own" },
  { label: "1 ref, 40 ws", workspaces: 40, perWorkspace: 5_000, refs: 1, nameLength: 20, names: "own" },
];

/** Fills one store with a shape against a ledger of `ceilingBytes` (the shape's sizes scaled to 2× the ceiling). */
export function measureCeiling(shape: HeapShape, ceilingBytes: number): CeilingRow {
  const ledger = new IndexLedger({ ceilingBytes });
  const path = shape.refs === 1 ? ONE : MANY;
  const store = new ReferenceStore(
    [path],
    undefined,
    { maxObjectsPerWorkspace: 1e9, maxBytesPerWorkspace: 1e12 },
    { ledger, author: "provider" },
  );
  const perDependent = shape.refs === 1 ? 210 : 7_800; // bytes, from the rows above
  const perWorkspace = Math.ceil((2 * ceilingBytes) / perDependent / shape.workspaces);
  collect();
  const heap0 = v8.getHeapStatistics().used_heap_size;
  fill(store, { ...shape, perWorkspace });
  collect();
  return {
    label: shape.label,
    ceilingBytes,
    chargedBytes: ledger.total(),
    heapBytes: v8.getHeapStatistics().used_heap_size - heap0,
    dependents: store.size,
    unreadable: store.unreadable.names + store.unreadable.budget + store.unreadable.share,
    unreadableBytes: store.heldBytes().unreadable,
  };
}

/** Runs every shape in a child process of its own (`--expose-gc`). */
export function measureAll(ceilingMiB?: number): { rows: HeapRow[]; ceiling: CeilingRow[] } {
  const self = fileURLToPath(import.meta.url);
  const run = (...args: string[]): string =>
    execFileSync(process.execPath, ["--expose-gc", "--max-semi-space-size=4", self, ...args], {
      encoding: "utf8",
      maxBuffer: 1 << 20,
    });
  const rows = SHAPES.map((_, i) => JSON.parse(run(`--shape=${i}`)) as HeapRow);
  if (ceilingMiB === undefined) return { rows, ceiling: [] };
  const ceiling = CEILING_SHAPES.map(
    (_, i) => JSON.parse(run(`--ceiling=${i}`, `--ceiling-mib=${ceilingMiB}`)) as CeilingRow,
  );
  return { rows, ceiling };
}

/** The rows as printed, by bench/run.ts's index-memory table too. */
export function heapTable(rows: HeapRow[], ceiling: CeilingRow[]): string {
  const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
  const out = ["shape                 dependents  references  heap MiB  B/dep  B/ref  RSS B/dep  charged/heap"];
  for (const r of rows)
    out.push(
      `${r.label.padEnd(20)}  ${String(r.dependents).padStart(10)}  ${String(r.references).padStart(10)}  ` +
        `${mib(r.heapBytes).padStart(8)}  ${String(Math.round(r.heapBytes / r.dependents)).padStart(5)}  ` +
        `${String(Math.round(r.heapBytes / r.references)).padStart(5)}  ` +
        `${String(Math.round(r.rssBytes / r.dependents)).padStart(9)}  ${(r.chargedBytes / r.heapBytes).toFixed(3)}`,
    );
  for (const c of ceiling)
    out.push(
      `ceiling ${mib(c.ceilingBytes)} MiB, ${c.label}: charged ${mib(c.chargedBytes)} MiB, heap ${mib(c.heapBytes)} MiB; ` +
        `${c.dependents} dependents, ${c.unreadable} unreadable (${mib(c.unreadableBytes)} MiB by the model); ` +
        `heap / (charged + unreadable) ${(c.heapBytes / (c.chargedBytes + c.unreadableBytes)).toFixed(3)}`,
    );
  return out.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string): string | undefined =>
    process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const shape = arg("shape");
  const ceiling = arg("ceiling");
  const ceilingMiB = Number(arg("ceiling-mib") ?? 16);
  if (shape !== undefined) console.log(JSON.stringify(measure(SHAPES[Number(shape)]!)));
  else if (ceiling !== undefined)
    console.log(JSON.stringify(measureCeiling(CEILING_SHAPES[Number(ceiling)]!, ceilingMiB * 2 ** 20)));
  else {
    const out = measureAll(ceilingMiB);
    if (process.argv.includes("--json")) console.log(JSON.stringify(out));
    else console.log(heapTable(out.rows, out.ceiling));
  }
}
