// `node bench/fieldpath.ts`: field-path evaluation on one large dependent, the case that blocked the event loop for
// 12.3 s before evaluation was made linear (an 812 KiB dependent with a 110k-element list). Prints the
// median of several runs per shape; a benchmark, not a test (no assertion on time). Target: < 100 ms at 110k.
//
//   --elements=110000   list length      --runs=7   timed runs per shape (after one warm-up)
//   --old               also time the quadratic implementation it replaced (at --old-elements, default 20000)
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import {
  MAX_VISITED_VALUES,
  evaluate,
  parseFieldPath,
  references,
  type FieldPath,
} from "../src/fieldpath/fieldpath.ts";
import { summarize } from "./stats.ts";
import { oldReferencedNames } from "../tools/fieldpath-oracle.ts";

const { values } = parseArgs({
  options: {
    elements: { type: "string", default: "110000" },
    runs: { type: "string", default: "7" },
    old: { type: "boolean", default: false },
    "old-elements": { type: "string", default: "20000" },
  },
});
const elements = Number(values.elements);
const runs = Number(values.runs);

function mustParse(source: string): FieldPath {
  const parsed = parseFieldPath(source);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.path;
}

/** The dependent of the review: a leaf list of short, distinct names (about 7.5 bytes each as JSON). */
function leafList(n: number): unknown {
  return { metadata: { name: "big" }, spec: { names: Array.from({ length: n }, (_, i) => `n${i.toString(36)}`) } };
}

/** The same number of names, one object each, as `.spec.nics[*].subnetRef.name` reads them. */
function objectList(n: number): unknown {
  return {
    metadata: { name: "big" },
    spec: { nics: Array.from({ length: n }, (_, i) => ({ subnetRef: { name: `s${i.toString(36)}` } })) },
  };
}

function time(what: string, fn: () => unknown): void {
  fn(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  const s = summarize(samples);
  console.log(`${what.padEnd(62)} median ${s.p50.toFixed(1).padStart(7)} ms   max ${s.max.toFixed(1).padStart(7)} ms`);
}

const leaves = leafList(elements);
const objects = objectList(elements);
const namesPath = mustParse(".spec.names[*]");
const nicsPath = mustParse(".spec.nics[*].subnetRef.name");
console.log(
  `node ${process.version}, ${elements} elements (leaf list ${(JSON.stringify(leaves).length / 1024).toFixed(0)} KiB, ` +
    `object list ${(JSON.stringify(objects).length / 1024).toFixed(0)} KiB), cap ${MAX_VISITED_VALUES} visited values, ${runs} runs`,
);
time(`evaluate .spec.names[*] (all ${elements} names)`, () => evaluate(leaves, namesPath));
time(`references .spec.names[*], name absent (full scan)`, () => references(leaves, namesPath, "absent"));
time(`evaluate .spec.nics[*].subnetRef.name`, () => evaluate(objects, nicsPath));
time(`references .spec.nics[*].subnetRef.name, name absent`, () => references(objects, nicsPath, "absent"));
// The path reads .spec and .spec.names first: two values of the budget.
const atCap = leafList(MAX_VISITED_VALUES - 2);
time(`references at the cap (${MAX_VISITED_VALUES - 2} names, all read)`, () => references(atCap, namesPath, "absent"));
const overCap = leafList(MAX_VISITED_VALUES * 4);
time(`references over the cap (${MAX_VISITED_VALUES * 4} names: refused unread)`, () =>
  references(overCap, namesPath, "absent"),
);
if (values.old) {
  const n = Number(values["old-elements"]);
  const small = leafList(n);
  time(`old implementation, .spec.names[*] (${n} names)`, () => oldReferencedNames(small, namesPath));
  time(`new implementation, .spec.names[*] (${n} names)`, () => evaluate(small, namesPath));
}
