import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { oldReferencedNames } from "../../tools/fieldpath-oracle.ts";
import {
  FIELD_PATH_PATTERN,
  MAX_VISITED_VALUES,
  evaluate,
  findReference,
  parseFieldPath,
  referencedNames,
  references,
  type FieldPath,
} from "../../src/fieldpath/fieldpath.ts";

function mustParse(source: string): FieldPath {
  const parsed = parseFieldPath(source);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.path;
}

/** The original's regex, copied from its CRD. */
const ORIGINAL_PATTERN = /^\.?[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)+$/;
const pattern = new RegExp(FIELD_PATH_PATTERN);

/** The original's Resolve: walk nested objects along dot segments; a string leaf or "". */
function originalResolve(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const seg of path.replace(/^\./, "").split(".")) {
    if (typeof cur !== "object" || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, seg)) return "";
    cur = (cur as Record<string, unknown>)[seg];
  }
  return typeof cur === "string" ? cur : "";
}

const ident = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,6}$/);
const originalPath = fc
  .tuple(fc.boolean(), fc.array(ident, { minLength: 2, maxLength: 5 }))
  .map(([dot, segs]) => (dot ? "." : "") + segs.join("."));
const selector = fc.oneof(
  fc.constant("[*]"),
  fc.nat({ max: 5 }).map((n) => `[${n}]`),
);
const widenedPath = fc
  .tuple(fc.boolean(), fc.array(fc.tuple(ident, fc.array(selector, { maxLength: 2 })), { minLength: 2, maxLength: 4 }))
  .map(([dot, segs]) => (dot ? "." : "") + segs.map(([id, sels]) => id + sels.join("")).join("."));
/** Strings built from the characters that matter to the grammar, so near-misses are common. */
const nearMiss = fc
  .array(fc.constantFrom(".", "a", "Z", "_", "0", "1", "9", "[", "]", "*", "-", " ", "$"), { maxLength: 14 })
  .map((cs) => cs.join(""));

describe("parseFieldPath", () => {
  const accepted: [string, string][] = [
    ["original style with leading dot", ".spec.vpcRef.name"],
    ["original style without leading dot", "spec.vpcRef.name"],
    ["underscores and digits", "._a1.b_2"],
    ["[*] list traversal", ".spec.nics[*].subnetRef.name"],
    ["[n] index", ".spec.nics[0].name"],
    ["multi-digit index", ".spec.nics[12].name"],
    ["selector on the leaf", ".spec.names[*]"],
    ["nested selectors", ".spec.matrix[*][1].name"],
  ];
  for (const [why, source] of accepted) {
    it(`accepts ${source} (${why})`, () => {
      const parsed = parseFieldPath(source);
      assert.equal(parsed.ok, true, parsed.ok ? "" : parsed.error);
      assert.equal(pattern.test(source), true, "schema pattern must agree");
    });
  }

  it("parses segments and selectors", () => {
    assert.deepEqual(mustParse(".spec.nics[*].ref[2].name").segments, [
      { field: "spec", selectors: [] },
      { field: "nics", selectors: [{ kind: "all" }] },
      { field: "ref", selectors: [{ kind: "index", index: 2 }] },
      { field: "name", selectors: [] },
    ]);
  });

  const rejected: [string, string, string][] = [
    ["empty", "", "field path is empty"],
    ["one segment", ".spec", 'invalid field path ".spec": needs at least two fields, like ".spec.name"'],
    [
      "empty segment",
      ".spec..name",
      'invalid field path ".spec..name": expected a field name (letter or "_"), found "." at position 7',
    ],
    [
      "trailing dot",
      ".spec.",
      'invalid field path ".spec.": expected a field name, found the end of the path at position 7',
    ],
    [
      "leading digit",
      ".1spec.name",
      'invalid field path ".1spec.name": expected a field name (letter or "_"), found "1" at position 2',
    ],
    ["empty brackets", ".a[].b", 'invalid field path ".a[].b": expected "[*]" or "[<index>]" at position 3'],
    ["unclosed bracket", ".a[*.b", 'invalid field path ".a[*.b": expected "]" at position 5'],
    ["negative index", ".a[-1].b", 'invalid field path ".a[-1].b": expected "[*]" or "[<index>]" at position 3'],
    ["leading zero", ".a[01].b", 'invalid field path ".a[01].b": list index has a leading zero at position 4'],
    [
      "huge index",
      ".a[1234567890].b",
      'invalid field path ".a[1234567890].b": list index is longer than 9 digits at position 4',
    ],
    ["dash", ".spec.vpc-ref", 'invalid field path ".spec.vpc-ref": unexpected "-" at position 10'],
    [
      "jsonpath braces",
      "{.spec.name}",
      'invalid field path "{.spec.name}": expected a field name (letter or "_"), found "{" at position 1',
    ],
    ["quoted key", ".spec['a'].b", 'invalid field path ".spec[\'a\'].b": expected "[*]" or "[<index>]" at position 6'],
  ];
  for (const [why, source, error] of rejected) {
    it(`rejects ${JSON.stringify(source)} (${why})`, () => {
      assert.deepEqual(parseFieldPath(source), { ok: false, error });
      assert.equal(pattern.test(source), false, "schema pattern must agree");
    });
  }

  it("accepts every path the original's pattern accepts", () => {
    fc.assert(
      fc.property(originalPath, (p) => {
        assert.equal(ORIGINAL_PATTERN.test(p), true);
        assert.equal(parseFieldPath(p).ok, true);
        assert.equal(pattern.test(p), true);
      }),
    );
  });

  it("accepts every widened path", () => {
    fc.assert(fc.property(widenedPath, (p) => parseFieldPath(p).ok && pattern.test(p)));
  });

  it("agrees with FIELD_PATH_PATTERN on arbitrary and near-miss strings", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), nearMiss, originalPath, widenedPath), (s) => {
        assert.equal(parseFieldPath(s).ok, pattern.test(s), s);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("referencedNames / references", () => {
  const vm = {
    metadata: { name: "vm-1" },
    spec: {
      vpcRef: { name: "my-vpc" },
      nics: [{ subnetRef: { name: "a" } }, { subnetRef: { name: "b" } }, { subnetRef: { name: 7 } }, null, "x"],
      tags: ["t1", 2, "t2", "t1"],
      count: 3,
    },
  };
  const cases: [string, string, string[]][] = [
    ["string leaf", ".spec.vpcRef.name", ["my-vpc"]],
    ["no leading dot", "spec.vpcRef.name", ["my-vpc"]],
    ["[*] collects every string leaf, skipping junk elements", ".spec.nics[*].subnetRef.name", ["a", "b"]],
    ["[n] picks one element", ".spec.nics[1].subnetRef.name", ["b"]],
    ["index past the end", ".spec.nics[9].subnetRef.name", []],
    ["index on a non-string leaf", ".spec.nics[2].subnetRef.name", []],
    ["leaf list, deduplicated, non-strings dropped", ".spec.tags[*]", ["t1", "t2"]],
    ["missing field", ".spec.nothing.name", []],
    ["non-string leaf", ".spec.count.x", []],
    ["number leaf", ".metadata.count", []],
    ["field access on a list", ".spec.nics.subnetRef", []],
    ["[*] on an object", ".spec.vpcRef[*].name", []],
    ["inherited properties are not fields", ".spec.constructor.name", []],
    ["__proto__ is not a field", ".__proto__.constructor", []],
  ];
  for (const [why, source, expected] of cases) {
    it(`${source}: ${why}`, () => {
      assert.deepEqual(referencedNames(vm, mustParse(source)), expected);
    });
  }

  it("references matches only the exact name", () => {
    const p = mustParse(".spec.vpcRef.name");
    assert.equal(references(vm, p, "my-vpc"), true);
    assert.equal(references(vm, p, "my-vp"), false);
    assert.equal(references(vm, p, "MY-VPC"), false);
  });

  it("never throws on any value, valid path", () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withMap: true, withSet: true }), widenedPath, (obj, p) => {
        const names = referencedNames(obj, mustParse(p));
        assert.ok(names.every((n) => typeof n === "string"));
      }),
      { numRuns: 1000 },
    );
  });

  it("agrees with the original's Resolve on dot paths", () => {
    const key = fc.constantFrom("spec", "ref", "name", "x");
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom("n1", "n2", 1, null, true),
        fc.dictionary(key, tie("node"), { maxKeys: 3 }),
        fc.array(tie("node"), { maxLength: 2 }),
      ),
    })).node;
    const path = fc.array(key, { minLength: 2, maxLength: 4 }).map((segs) => "." + segs.join("."));
    fc.assert(
      fc.property(tree, path, fc.constantFrom("n1", "n2"), (obj, p, name) => {
        assert.equal(references(obj, mustParse(p), name), originalResolve(obj, p) === name);
      }),
      { numRuns: 2000 },
    );
  });

  it("[*] matches iff some element matches, [n] iff element n matches", () => {
    const element = fc.oneof(
      fc.record({ name: fc.constantFrom("a", "b", 1) }),
      fc.constantFrom(null, "a", 3, [] as unknown[]),
      fc.record({ other: fc.constant("a") }),
    );
    fc.assert(
      fc.property(fc.array(element, { maxLength: 6 }), fc.nat({ max: 7 }), (list, n) => {
        const obj = { spec: { items: list } };
        const matches = (e: unknown) =>
          typeof e === "object" && e !== null && !Array.isArray(e) && (e as { name?: unknown }).name === "a";
        assert.equal(references(obj, mustParse(".spec.items[*].name"), "a"), list.some(matches));
        assert.equal(references(obj, mustParse(`.spec.items[${n}].name`), "a"), n < list.length && matches(list[n]));
      }),
    );
  });
});

describe("linear evaluation with a cap", () => {
  const key = fc.constantFrom("spec", "items", "name", "x");
  const tree = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      fc.constantFrom("n1", "n2", "n3", 1, null, true),
      fc.dictionary(key, tie("node"), { maxKeys: 3 }),
      fc.array(tie("node"), { maxLength: 4 }),
    ),
  })).node;
  const sel = fc.oneof(
    fc.constant("[*]"),
    fc.nat({ max: 3 }).map((n) => `[${n}]`),
  );
  const path = fc
    .array(fc.tuple(key, fc.array(sel, { maxLength: 2 })), { minLength: 2, maxLength: 4 })
    .map((segs) => "." + segs.map(([k, s]) => k + s.join("")).join("."));

  it("finds exactly what the old implementation found, in the same order, below the cap", () => {
    fc.assert(
      fc.property(tree, path, (obj, p) => {
        const parsed = mustParse(p);
        const old = oldReferencedNames(obj, parsed);
        assert.deepEqual(evaluate(obj, parsed), { names: old, complete: true });
        for (const name of ["n1", "n2", "n3"]) {
          assert.equal(findReference(obj, parsed, name), old.includes(name) ? "referenced" : "absent");
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("with any cap: complete results equal the uncapped ones, and references never turns false because of it", () => {
    fc.assert(
      fc.property(tree, path, fc.nat({ max: 12 }), fc.constantFrom("n1", "n2"), (obj, p, limit, name) => {
        const parsed = mustParse(p);
        const full = evaluate(obj, parsed);
        const capped = evaluate(obj, parsed, limit);
        if (capped.complete) assert.deepEqual(capped.names, full.names);
        else for (const n of capped.names) assert.ok(full.names.includes(n));
        // Fail closed: when the full result names it, the capped check says so or says it could not tell.
        const result = findReference(obj, parsed, name, limit);
        if (full.names.includes(name)) assert.notEqual(result, "absent");
        if (result === "absent") assert.equal(references(obj, parsed, name, limit), false);
        else assert.equal(references(obj, parsed, name, limit), true);
      }),
      { numRuns: 3000 },
    );
  });

  it("counts every field value and list element it steps on", () => {
    const obj = { spec: { names: ["a", "b", "c"] } };
    const p = mustParse(".spec.names[*]");
    // spec, names, and three elements: five values.
    assert.deepEqual(evaluate(obj, p, 5), { names: ["a", "b", "c"], complete: true });
    assert.deepEqual(evaluate(obj, p, 4), { names: [], complete: false });
    assert.equal(findReference(obj, p, "z", 4), "over-limit");
    assert.equal(references(obj, p, "z", 4), true, "over the cap counts as referenced");
    assert.equal(findReference(obj, p, "z", 5), "absent");
  });

  it("reads a list far longer than a spread push allows, deduplicated, without throwing", () => {
    const n = 200_000; // past the ~120k arguments where push(...list) throws RangeError
    const names = Array.from({ length: n }, (_, i) => `n${i % 150_000}`);
    const result = evaluate({ spec: { names } }, mustParse(".spec.names[*]"));
    assert.equal(result.complete, true);
    assert.equal(result.names.length, 150_000);
    assert.equal(result.names[0], "n0");
    assert.equal(result.names.at(-1), "n149999");
  });

  it("stops at MAX_VISITED_VALUES by default and refuses to call such an object unreferenced", () => {
    const names = Array.from({ length: MAX_VISITED_VALUES }, () => "x");
    const obj = { spec: { names } };
    const p = mustParse(".spec.names[*]");
    assert.equal(evaluate(obj, p).complete, false);
    assert.equal(findReference(obj, p, "y"), "over-limit");
    assert.equal(references(obj, p, "y"), true);
    assert.deepEqual(referencedNames({ spec: { names: names.slice(2) } }, p), ["x"]);
  });
});
