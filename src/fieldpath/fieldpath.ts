// Field paths: where in a dependent object the name of its dependency is found.
//
// Syntax: the original's dot syntax (`.spec.vpcRef.name`, leading dot optional, identifiers `[a-zA-Z_][a-zA-Z0-9_]*`,
// at least two of them) widened with list selectors on any segment: `[*]` visits every element, `[n]` one element
// (`.spec.nics[*].subnetRef.name`, `.spec.nics[0].name`). Paths are parsed once, when a rule is registered; resolving
// a parsed path against an object never throws, whatever the object holds.

/** `[*]` (every element) or `[n]` (one element) applied to a list. */
export type ListSelector = { kind: "all" } | { kind: "index"; index: number };

export interface FieldSegment {
  /** Object key to read. */
  field: string;
  /** List selectors applied, in order, to the value found under `field`. */
  selectors: readonly ListSelector[];
}

/** A parsed field path. Only parseFieldPath makes one, so holding one means the path is valid. */
export interface FieldPath {
  readonly source: string;
  readonly segments: readonly FieldSegment[];
}

export type ParseResult = { ok: true; path: FieldPath } | { ok: false; error: string };

const IDENT = "[a-zA-Z_][a-zA-Z0-9_]*";
// Indexes are capped at 9 digits and have no leading zeros, so the schema pattern and the parser agree exactly and
// every accepted index is a safe integer.
const INDEX = "0|[1-9][0-9]{0,8}";
const SELECTOR = `\\[(\\*|${INDEX})\\]`;
const SEGMENT = `${IDENT}(${SELECTOR})*`;

/**
 * JSON-schema (and RE2) pattern accepting exactly the paths parseFieldPath accepts. It is a superset of the original's
 * `^\.?[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)+$`, so every rule written for the original stays valid.
 */
export const FIELD_PATH_PATTERN = `^\\.?${SEGMENT}(\\.${SEGMENT})+$`;

const MAX_INDEX_DIGITS = 9;

function isIdentStart(c: string): boolean {
  return (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_";
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || (c >= "0" && c <= "9");
}

function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

/** Parses a field path, or says what is wrong with it and where (1-based character position). */
export function parseFieldPath(path: string): ParseResult {
  if (typeof path !== "string" || path === "") {
    return { ok: false, error: "field path is empty" };
  }
  const fail = (pos: number, what: string): ParseResult => ({
    ok: false,
    error: `invalid field path ${JSON.stringify(path)}: ${what} at position ${pos + 1}`,
  });
  const segments: FieldSegment[] = [];
  let i = path.startsWith(".") ? 1 : 0;
  for (;;) {
    const start = i;
    if (i >= path.length) return fail(i, "expected a field name, found the end of the path");
    if (!isIdentStart(path[i]!)) {
      return fail(i, `expected a field name (letter or "_"), found ${JSON.stringify(path[i])}`);
    }
    while (i < path.length && isIdentPart(path[i]!)) i++;
    const field = path.slice(start, i);
    const selectors: ListSelector[] = [];
    while (i < path.length && path[i] === "[") {
      const open = i;
      i++;
      if (path[i] === "*") {
        i++;
        selectors.push({ kind: "all" });
      } else {
        const digitsStart = i;
        while (i < path.length && isDigit(path[i]!)) i++;
        const digits = path.slice(digitsStart, i);
        if (digits === "") return fail(open, 'expected "[*]" or "[<index>]"');
        if (digits.length > 1 && digits.startsWith("0")) return fail(digitsStart, "list index has a leading zero");
        if (digits.length > MAX_INDEX_DIGITS)
          return fail(digitsStart, `list index is longer than ${MAX_INDEX_DIGITS} digits`);
        selectors.push({ kind: "index", index: Number(digits) });
      }
      if (path[i] !== "]") return fail(i, 'expected "]"');
      i++;
    }
    segments.push({ field, selectors });
    if (i >= path.length) break;
    if (path[i] !== ".") return fail(i, `unexpected ${JSON.stringify(path[i])}`);
    i++;
  }
  if (segments.length < 2) {
    return {
      ok: false,
      error: `invalid field path ${JSON.stringify(path)}: needs at least two fields, like ".spec.name"`,
    };
  }
  return { ok: true, path: { source: path, segments } };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * How many values one evaluation of a path may visit (every field value and list element it steps on, leaves
 * included). Evaluation is linear, so this bounds its time: bench/fieldpath.ts measures about 0.1 µs per visited
 * value, so the cap costs at most a few tens of milliseconds of one event loop. 250,000 is more than twice the
 * 110k-element list of the largest dependent seen in the review (812 KiB) and about a third of what kcp's 1.5 MiB
 * object limit allows at 2 bytes per element (`[0,0,...]`), so a real dependent never reaches it.
 */
export const MAX_VISITED_VALUES = 250_000;

/** What evaluating a path found; `complete` false means the cap was reached and `names` holds only what came before. */
export interface Evaluation {
  names: string[];
  complete: boolean;
}

/** `referenced`: the name was found; `over-limit`: the cap was reached before it was; `absent`: it is not there. */
export type ReferenceResult = "referenced" | "absent" | "over-limit";

/**
 * Walks `path` through `obj`, calling `onLeaf` for every value at its end, in document order, until `onLeaf` returns
 * true (stop) or `limit` values were visited. Returns false when the limit stopped it. Iterative and linear in the
 * values visited: each frontier is a fresh array filled element by element (never `push(...list)`, which throws
 * RangeError past about 120k arguments).
 */
function walk(obj: unknown, path: FieldPath, limit: number, onLeaf: (leaf: unknown) => boolean): boolean {
  let visited = 0;
  let current: unknown[] = [obj];
  for (const segment of path.segments) {
    const next: unknown[] = [];
    for (const value of current) {
      if (!isPlainObject(value) || !Object.hasOwn(value, segment.field)) continue;
      let found: unknown[] = [value[segment.field]];
      if (++visited > limit) return false;
      for (const selector of segment.selectors) {
        const selected: unknown[] = [];
        for (const list of found) {
          if (!Array.isArray(list)) continue;
          if (selector.kind === "index") {
            if (selector.index < list.length) {
              selected.push(list[selector.index]);
              if (++visited > limit) return false;
            }
            continue;
          }
          const elements = list as unknown[];
          if (visited + elements.length > limit) return false;
          visited += elements.length;
          for (let k = 0; k < elements.length; k++) selected.push(elements[k]);
        }
        found = selected;
      }
      for (let k = 0; k < found.length; k++) next.push(found[k]);
    }
    current = next;
    if (current.length === 0) return true;
  }
  for (const leaf of current) if (onLeaf(leaf)) return true;
  return true;
}

/**
 * Every string found at `path` in `obj`, deduplicated, in document order, and whether the whole path was read (at
 * most `limit` values are visited). Missing fields, wrong types and non-string leaves contribute nothing. Only own
 * properties are read, so `.constructor.name` never finds "Object".
 */
export function evaluate(obj: unknown, path: FieldPath, limit: number = MAX_VISITED_VALUES): Evaluation {
  const names = new Set<string>();
  const complete = walk(obj, path, limit, (leaf) => {
    if (typeof leaf === "string") names.add(leaf);
    return false;
  });
  return { names: [...names], complete };
}

/** The strings `evaluate` finds; past the cap, only those found before it. */
export function referencedNames(obj: unknown, path: FieldPath, limit: number = MAX_VISITED_VALUES): string[] {
  return evaluate(obj, path, limit).names;
}

/** Whether `obj` names `name` at `path` (with `[*]`: any element), stopping at the first match or at the cap. */
export function findReference(
  obj: unknown,
  path: FieldPath,
  name: string,
  limit: number = MAX_VISITED_VALUES,
): ReferenceResult {
  let found = false;
  const complete = walk(obj, path, limit, (leaf) => (found = leaf === name));
  return found ? "referenced" : complete ? "absent" : "over-limit";
}

/**
 * True when `obj` names `name` at `path` (with `[*]`: when any element does). Fails closed: an object too large to
 * read within the cap counts as referencing, so the cap can make a delete wait but never lets one through.
 */
export function references(obj: unknown, path: FieldPath, name: string, limit: number = MAX_VISITED_VALUES): boolean {
  return findReference(obj, path, name, limit) !== "absent";
}
