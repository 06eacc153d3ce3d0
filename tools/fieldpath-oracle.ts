// The field-path walk the linear one replaced (Array.includes dedup, spread push), kept as the oracle: the property
// tests compare the new walk's names with it, and bench/fieldpath.ts times both.
import type { FieldPath } from "../src/fieldpath/fieldpath.ts";

/** The quadratic implementation evaluation replaced (Array.includes dedup, spread push): the semantics to keep. */
export function oldReferencedNames(obj: unknown, path: FieldPath): string[] {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  let current: unknown[] = [obj];
  for (const segment of path.segments) {
    const next: unknown[] = [];
    for (const value of current) {
      if (!isObj(value) || !Object.hasOwn(value, segment.field)) continue;
      let found: unknown[] = [value[segment.field]];
      for (const selector of segment.selectors) {
        const selected: unknown[] = [];
        for (const list of found) {
          if (!Array.isArray(list)) continue;
          if (selector.kind === "all") selected.push(...(list as unknown[]));
          else if (selector.index < list.length) selected.push(list[selector.index]);
        }
        found = selected;
      }
      next.push(...found);
    }
    current = next;
    if (current.length === 0) return [];
  }
  const names: string[] = [];
  for (const leaf of current) if (typeof leaf === "string" && !names.includes(leaf)) names.push(leaf);
  return names;
}
