// The registry kept up to date one rule at a time. Its source (source.ts) hands it the whole rule list on every
// change; a rule object seen before (stores keep it until an event replaces it) costs one map lookup, and only rules
// whose inputs changed are derived again (contribution.ts): object replaced, a resolution of one of its paths, its
// verdict, its side of its author's cap. A contribution equal to the last (a status-only write, a verdict that changes
// nothing this rule enforces) writes nothing, and settle() reports no change. buildRegistry is this from empty.
import { parseRule, ruleKeyOf, type ParsedRule } from "../../api/rule.ts";
import { AuthorCaps, createdOf } from "../../api/rule-cap.ts";
import { ruleKeyString, type WorkspacePath } from "../../api/types.ts";
import { NO_VERDICTS, verdictFor, type Verdicts } from "../../api/verdicts.ts";
import { asRecord, compareStrings } from "../../util/json.ts";
import { contribute, NO_CONTRIBUTION, verdictPrint, type Contribution } from "./contribution.ts";
import { newCounter, PathIndex, RegistryTables, type RegistryCounter } from "./entry-index.ts";
import type { PathResolutions, RegistryProblem, RuleRegistry } from "./registry-model.ts";

export interface RegistryStateOptions {
  /** The operator's opt-in (webhook flag) for rules whose author declined the read-only checks. */
  enforceUnverified?: boolean;
  /** At most this many rules per author (workspace) are enforced (--max-rules-per-workspace); unset: no cap. */
  maxRulesPerWorkspace?: number | undefined;
  counter?: RegistryCounter;
}

interface RuleRecord {
  object: unknown;
  parsed: ParsedRule;
  uid: string | undefined;
  verdict: string;
  contribution: Contribution;
  seen: number; // the observe() that last saw it
}

const metaOf = (obj: unknown) => asRecord(asRecord(obj)?.["metadata"]);
const uidOf = (obj: unknown) =>
  typeof metaOf(obj)?.["uid"] === "string" ? (metaOf(obj)!["uid"] as string) : undefined;

export class RegistryState {
  private readonly opts: RegistryStateOptions;
  readonly counter: RegistryCounter;
  private readonly records = new Map<string, RuleRecord>();
  /** Which rules are within their author's cap (none is over without a cap). */
  readonly caps: AuthorCaps | undefined;
  private readonly staged = new Map<string, { object: unknown; parsed: ParsedRule }>(); // observed, new or replaced
  private readonly gone = new Set<string>(); // observed gone, not settled yet
  private epoch = 0;
  private readonly byObject = new Map<object, RuleRecord>(); // each record's object → the record
  private unkeyed: RegistryProblem[] = [];
  private unkeyedPrint = "";
  private readonly paths = new PathIndex();
  private resolutions: PathResolutions = new Map();
  private verdicts: Verdicts | undefined;
  private readonly tables: RegistryTables;
  private problemList: RegistryProblem[] | undefined;
  private view: RuleRegistry | undefined; // until something changes

  constructor(opts: RegistryStateOptions = {}) {
    this.opts = opts;
    this.counter = opts.counter ?? newCounter();
    this.tables = new RegistryTables(this.counter);
    if (opts.maxRulesPerWorkspace !== undefined) this.caps = new AuthorCaps(opts.maxRulesPerWorkspace);
  }

  /**
   * Takes the current rule objects (first of a key wins) and returns every provider path they name, for the caller
   * to resolve before settle(). Nothing a lookup sees changes until settle().
   */
  observe(objects: readonly unknown[]): WorkspacePath[] {
    const epoch = ++this.epoch;
    const unkeyed: RegistryProblem[] = [];
    const seen = new Set<string>();
    this.staged.clear();
    for (const obj of objects) {
      const known = this.seenBefore(obj);
      if (known) {
        known.seen = epoch;
        continue;
      }
      const key = ruleKeyOf(obj);
      if (!key) {
        const name = metaOf(obj)?.["name"];
        const rule = `/${typeof name === "string" ? name : ""}`;
        unkeyed.push({ rule, message: "rule has no name or kcp.io/cluster annotation" });
        continue;
      }
      const k = ruleKeyString(key);
      const rec = this.records.get(k);
      if (rec?.seen === epoch || seen.has(k)) continue;
      if (rec) rec.seen = epoch;
      if (rec?.object === obj) continue;
      seen.add(k);
      this.counter.parsed++;
      this.staged.set(k, { object: obj, parsed: parseRule(obj)! });
    }
    this.gone.clear();
    for (const [k, rec] of this.records) if (rec.seen !== epoch && !this.staged.has(k)) this.gone.add(k);
    this.unkeyed = unkeyed;
    const paths = new Set(this.paths.named());
    for (const s of this.staged.values()) for (const d of s.parsed.dependencies) paths.add(d.path);
    return [...paths].sort(compareStrings) as WorkspacePath[];
  }

  /** The record of this very object, if it is one: found by identity, without reading the object. */
  private seenBefore(obj: unknown): RuleRecord | undefined {
    return typeof obj === "object" && obj !== null ? this.byObject.get(obj) : undefined;
  }

  /** Applies what observe() took, with these resolutions and verdicts; true when anything a lookup sees changed. */
  settle(resolutions: PathResolutions, verdicts: Verdicts = NO_VERDICTS): boolean {
    const dirty = new Set<string>();
    let changed = this.takeObserved(dirty);
    this.resolutions = resolutions;
    for (const k of this.paths.changed(resolutions)) dirty.add(k);
    if (verdicts !== this.verdicts) this.markVerdicts(verdicts, dirty);
    this.verdicts = verdicts;
    for (const k of dirty) if (this.derive(k)) changed = true;
    this.tables.flush();
    const unkeyedPrint = JSON.stringify(this.unkeyed);
    if (unkeyedPrint !== this.unkeyedPrint) {
      changed = true;
      this.tables.book.fresh.push(...this.unkeyed);
    }
    this.unkeyedPrint = unkeyedPrint;
    if (changed) {
      this.view = undefined;
      this.problemList = undefined;
    }
    return changed;
  }

  /** Removes the rules gone and records the rules staged; marks what must be derived again. */
  private takeObserved(dirty: Set<string>): boolean {
    for (const k of this.gone) {
      const rec = this.records.get(k)!;
      this.paths.index(k, rec.parsed, -1);
      this.tables.write(k, rec.contribution, NO_CONTRIBUTION);
      this.records.delete(k);
      this.byObject.delete(rec.object as object);
      for (const moved of this.caps?.remove(k) ?? []) dirty.add(moved);
    }
    for (const [k, { object, parsed }] of this.staged) {
      const old = this.records.get(k);
      if (old) this.paths.index(k, old.parsed, -1);
      this.paths.index(k, parsed, 1);
      const rec = { object, parsed, uid: uidOf(object), verdict: "", seen: this.epoch };
      const record = { ...rec, contribution: old?.contribution ?? NO_CONTRIBUTION };
      if (old) this.byObject.delete(old.object as object);
      this.records.set(k, record);
      this.byObject.set(object as object, record);
      for (const moved of this.caps?.add({ key: parsed.key, created: createdOf(object) }) ?? []) dirty.add(moved);
      dirty.add(k);
    }
    const changed = this.gone.size > 0;
    this.gone.clear();
    this.staged.clear();
    return changed;
  }

  /** New verdicts: only rules whose verdict changes what they enforce are derived again. */
  private markVerdicts(verdicts: Verdicts, dirty: Set<string>): void {
    for (const [k, rec] of this.records)
      if (verdictPrint(verdictFor(verdicts, k, rec.uid), rec.parsed.generation) !== rec.verdict) dirty.add(k);
  }

  /** Derives the rule's contribution again and writes where it differs; true when it did. */
  private derive(k: string): boolean {
    const rec = this.records.get(k);
    if (!rec) return false;
    this.counter.derived++;
    const verdict = verdictFor(this.verdicts ?? NO_VERDICTS, k, rec.uid);
    rec.verdict = verdictPrint(verdict, rec.parsed.generation);
    const inputs = {
      rule: rec.parsed,
      verdict,
      resolutions: this.resolutions,
      withinCap: this.caps?.within(k) ?? true,
      enforceUnverified: this.opts.enforceUnverified === true,
    };
    const next = contribute(inputs, this.opts.maxRulesPerWorkspace ?? 0);
    if (next.print === rec.contribution.print) return false;
    this.tables.write(k, rec.contribution, next);
    rec.contribution = next;
    return true;
  }

  /** How many problems there are, and how many rules have a part not enforced (for the gauges). */
  counts(): { problems: number; notEnforced: number } {
    return { problems: this.tables.book.total + this.unkeyed.length, notEnforced: this.tables.book.notEnforced };
  }

  /** The problems that appeared since the last call (each is logged once). */
  takeFresh(): RegistryProblem[] {
    return this.tables.book.fresh.splice(0);
  }

  /** Every problem, the unkeyed objects' first, then by rule (built again only after a change). */
  problems(): RegistryProblem[] {
    if (this.problemList) return this.problemList;
    const keys = [...this.records.keys()].sort(compareStrings);
    this.problemList = [...this.unkeyed, ...keys.flatMap((k) => this.records.get(k)!.contribution.problems)];
    return this.problemList;
  }

  /** The registry as lookups see it now. */
  current(): RuleRegistry {
    if (this.view) return this.view;
    const { registered, entries } = this.tables;
    const problems = (): RegistryProblem[] => this.problems();
    this.view = {
      ruleCount: registered,
      entryCount: entries,
      get problems() {
        return problems();
      },
      dependentTypes: () => this.tables.types.list(),
      find: (provider, gr) => ({ entries: this.tables.find(provider, gr) }),
    };
    return this.view;
  }
}
