// The registry's lookup tables, written one rule's entry at a time: key → entries sorted by rule (so lookups and
// messages come out in a stable order), and the dependent types with their field paths, reference-counted, for the
// dependents index. A list is replaced, never changed in place (copy on write): a review that took it keeps a
// consistent one. Each settle replaces a changed list once: a binary search per change and one array copy (a memory
// move of pointers, no comparisons), or one sort when most of it changed.
import { dependentTypeKey } from "../../api/index-report.ts";
import type { FieldPath } from "../../fieldpath/fieldpath.ts";
import { compareStrings } from "../../util/json.ts";
import type { ParsedRule } from "../../api/rule.ts";
import { grKey, providerKey, resolutionPrint, type Contribution, type KeyedEntry } from "./contribution.ts";
import type { GroupResource, LogicalClusterName } from "../../api/types.ts";
import {
  isNotEnforced,
  type IndexedType,
  type PathResolutions,
  type RegistryProblem,
  type RuleEntry,
} from "./registry-model.ts";
import type { DependentType } from "../admission.ts";

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
  /** Changes not yet applied, per key: rule → its new entry, or null to take it out. */
  private readonly pending = new Map<string, Map<string, RuleEntry | null>>();
  private readonly counter: RegistryCounter;

  constructor(counter: RegistryCounter) {
    this.counter = counter;
  }

  get(key: string): readonly RuleEntry[] | undefined {
    return this.lists.get(key);
  }

  /** Puts `entry` under `key`, replacing the same rule's entry there (seen by get() after flush()). */
  put(key: string, entry: RuleEntry): void {
    this.stage(key, entry.rule, entry);
  }

  /** Takes the rule's entry out from under `key` (after flush()). */
  drop(key: string, rule: string): void {
    this.stage(key, rule, null);
  }

  private stage(key: string, rule: string, entry: RuleEntry | null): void {
    this.counter.entryWrites++;
    const changes = this.pending.get(key) ?? new Map<string, RuleEntry | null>();
    this.pending.set(key, changes);
    changes.set(rule, entry);
  }

  /**
   * Applies the staged changes: one new list per key changed. A few changes are spliced in by binary search; many
   * (a first list, a relist) are merged with one sort, so filling a list of n entries costs n log n, not n².
   */
  flush(): void {
    for (const [key, changes] of this.pending) {
      const list = this.lists.get(key) ?? [];
      const next = changes.size * 8 < list.length ? spliced(list, changes) : merged(list, changes);
      if (next.length === 0) this.lists.delete(key);
      else this.lists.set(key, next);
    }
    this.pending.clear();
  }
}

function spliced(list: readonly RuleEntry[], changes: Map<string, RuleEntry | null>): RuleEntry[] {
  const next = list.slice();
  for (const [rule, entry] of changes) {
    const at = slot(next, rule);
    const present = next[at]?.rule === rule ? 1 : 0;
    if (entry) next.splice(at, present, entry);
    else if (present) next.splice(at, 1);
  }
  return next;
}

function merged(list: readonly RuleEntry[], changes: Map<string, RuleEntry | null>): RuleEntry[] {
  const next = list.filter((e) => !changes.has(e.rule));
  for (const entry of changes.values()) if (entry) next.push(entry);
  return next.sort((a, b) => compareStrings(a.rule, b.rule));
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

/** The lookup tables and their counts, written one rule's contribution at a time. */
export class RegistryTables {
  readonly byProvider: EntryLists;
  readonly byGroupResource: EntryLists;
  readonly types = new TypeCounts();
  readonly book = new ProblemBook();
  registered = 0; // rules with at least one entry
  entries = 0; // (rule, provider, group/resource) entries

  constructor(counter: RegistryCounter) {
    this.byProvider = new EntryLists(counter);
    this.byGroupResource = new EntryLists(counter);
  }

  find(provider: LogicalClusterName | undefined, gr: GroupResource): readonly RuleEntry[] {
    const list =
      provider === undefined ? this.byGroupResource.get(grKey(gr)) : this.byProvider.get(providerKey(provider, gr));
    return list ?? [];
  }

  flush(): void {
    this.byProvider.flush();
    this.byGroupResource.flush();
  }

  /** Replaces one rule's contribution in the lookup tables, entry by entry where they differ. */
  write(rule: string, old: Contribution, next: Contribution): void {
    const had = old.byProvider.size > 0;
    this.registered += (next.byProvider.size > 0 ? 1 : 0) - (had ? 1 : 0);
    this.book.replace(old.problems, next.problems);
    this.entries += next.byProvider.size - old.byProvider.size;
    this.writeTable(this.byProvider, rule, old.byProvider, next.byProvider, true);
    this.writeTable(this.byGroupResource, rule, old.byGroupResource, next.byGroupResource, false);
  }

  private writeTable(
    table: EntryLists,
    rule: string,
    old: Map<string, KeyedEntry>,
    next: Map<string, KeyedEntry>,
    typed: boolean,
  ): void {
    for (const [key, e] of old) {
      if (next.get(key)?.print === e.print) continue;
      if (typed) this.types.add(e.entry, -1);
      if (!next.has(key)) table.drop(key, rule);
    }
    for (const [key, e] of next) {
      if (old.get(key)?.print === e.print) continue;
      if (typed) this.types.add(e.entry, 1);
      table.put(key, e.entry);
    }
  }
}
