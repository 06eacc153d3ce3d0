// The registry's lookup tables, written one rule's entry at a time: key → entries sorted by rule (so lookups and
// messages come out in a stable order), and the dependent types with their field paths, reference-counted, for the
// dependents index. A list is replaced, never changed in place (copy on write): a review that took it keeps a
// consistent one. Replacing costs a binary search and one array copy (a memory move of pointers, no comparisons).
import { dependentTypeKey } from "../../api/index-report.ts";
import type { FieldPath } from "../../fieldpath/fieldpath.ts";
import { compareStrings } from "../../util/json.ts";
import type { ParsedRule } from "../../api/rule.ts";
import { resolutionPrint } from "./contribution.ts";
import {
  isNotEnforced,
  type DependentType,
  type IndexedType,
  type PathResolutions,
  type RegistryProblem,
  type RuleEntry,
} from "./registry.ts";

/** Counts the registry's work, for tests that check it is proportional to the change (never wall time). */
export interface RegistryCounter {
  /** Rule objects parsed. */
  parsed: number;
  /** Rule contributions derived. */
  derived: number;
  /** Entries written into or removed from a lookup list. */
  entryWrites: number;
}

export function newCounter(): RegistryCounter {
  return { parsed: 0, derived: 0, entryWrites: 0 };
}

/** Where `rule` is, or would go, in a list sorted by rule. */
function slot(list: readonly RuleEntry[], rule: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareStrings(list[mid]!.rule, rule) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class EntryLists {
  private readonly lists = new Map<string, readonly RuleEntry[]>();
  private readonly counter: RegistryCounter;

  constructor(counter: RegistryCounter) {
    this.counter = counter;
  }

  get(key: string): readonly RuleEntry[] | undefined {
    return this.lists.get(key);
  }

  /** Puts `entry` under `key`, replacing the same rule's entry there. */
  put(key: string, entry: RuleEntry): void {
    this.counter.entryWrites++;
    const list = this.lists.get(key) ?? [];
    const at = slot(list, entry.rule);
    const replace = list[at]?.rule === entry.rule ? 1 : 0;
    const next = list.slice();
    next.splice(at, replace, entry);
    this.lists.set(key, next);
  }

  /** Takes the rule's entry out from under `key`. */
  drop(key: string, rule: string): void {
    this.counter.entryWrites++;
    const list = this.lists.get(key) ?? [];
    const at = slot(list, rule);
    if (list[at]?.rule !== rule) return;
    if (list.length === 1) this.lists.delete(key);
    else {
      const next = list.slice();
      next.splice(at, 1);
      this.lists.set(key, next);
    }
  }
}

/** The dependent types the entries ask for, with each field path counted by the entries that ask for it. */
export class TypeCounts {
  private readonly types = new Map<string, { dependent: DependentType; paths: Map<string, [FieldPath, number]> }>();
  private cached: IndexedType[] | undefined;

  add(entry: RuleEntry, by: 1 | -1): void {
    const key = dependentTypeKey(entry.dependent);
    const t = this.types.get(key) ?? { dependent: entry.dependent, paths: new Map<string, [FieldPath, number]>() };
    this.types.set(key, t);
    for (const p of entry.fieldPaths) {
      const n = (t.paths.get(p.source)?.[1] ?? 0) + by;
      // The list changes only when a path appears or goes; more or fewer rules asking for it change nothing.
      if (n === 0 || n === by) this.cached = undefined;
      if (n === 0) t.paths.delete(p.source);
      else t.paths.set(p.source, [p, n]);
    }
    if (t.paths.size === 0) this.types.delete(key);
  }

  /** Sorted by type key, each type's paths by source, so the result is stable (built again only after a change). */
  list(): readonly IndexedType[] {
    this.cached ??= [...this.types.keys()].sort(compareStrings).map((key) => {
      const t = this.types.get(key)!;
      const sources = [...t.paths.keys()].sort(compareStrings);
      return { dependent: t.dependent, fieldPaths: sources.map((s) => t.paths.get(s)![0]) };
    });
    return this.cached;
  }
}

/** The problems' counts, kept as rules' problems are replaced, and those that appeared, to be logged once. */
export class ProblemBook {
  total = 0;
  /** Rules with at least one problem that leaves a part of them not enforced. */
  notEnforced = 0;
  readonly fresh: RegistryProblem[] = [];

  replace(old: readonly RegistryProblem[], next: readonly RegistryProblem[]): void {
    const notEnforced = (ps: readonly RegistryProblem[]): number => (ps.some((p) => isNotEnforced(p.message)) ? 1 : 0);
    this.total += next.length - old.length;
    this.notEnforced += notEnforced(next) - notEnforced(old);
    const before = new Set(old.map((p) => p.message));
    for (const p of next) if (!before.has(p.message)) this.fresh.push(p);
  }
}

/** Which rules name each provider path, and what each path last resolved to: a path's change marks its rules only. */
export class PathIndex {
  private readonly rules = new Map<string, Set<string>>();
  private readonly prints = new Map<string, string>();

  named(): Iterable<string> {
    return this.rules.keys();
  }

  index(rule: string, parsed: ParsedRule, by: 1 | -1): void {
    for (const d of parsed.dependencies) {
      const rules = this.rules.get(d.path) ?? new Set<string>();
      if (by === 1) rules.add(rule);
      else rules.delete(rule);
      if (rules.size === 0) this.rules.delete(d.path);
      else this.rules.set(d.path, rules);
    }
  }

  /** Takes the new resolutions; returns the rules naming a path whose resolution changed (or appeared, or went). */
  changed(resolutions: PathResolutions): Set<string> {
    const dirty = new Set<string>();
    for (const path of new Set([...this.prints.keys(), ...resolutions.keys()])) {
      const print = resolutionPrint(resolutions.get(path));
      if (print === (this.prints.get(path) ?? "")) continue;
      if (print === "") this.prints.delete(path);
      else this.prints.set(path, print);
      for (const k of this.rules.get(path) ?? []) dirty.add(k);
    }
    return dirty;
  }
}
