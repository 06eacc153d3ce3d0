// What `--lookup=auto` has learned per dependent type: what answered its last lookup or probe (index, live, none),
// when, and where a lookup listed (the consumer workspace a probe lists in). Written by the hybrid finder (lookups)
// and the prober; read by the decision (protection.ts) for the finder, the prober and the index report. Built before
// all of them and handed to each at construction: nothing is wired afterwards.
import type { Logger } from "pino";
import { parseDependentTypeKey, type LookupSource } from "../../api/index-report.ts";
import type { LogicalClusterName } from "../../api/types.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import type { Lookup } from "../admission.ts";
import { dependentListPath } from "./live.ts";
import type { Learned } from "./protection.ts";
import type { ProbeTarget } from "./probe.ts";

interface Entry extends Learned {
  /** The consumer workspace of the type's last lookup (where a probe lists). */
  consumer?: LogicalClusterName;
}

const HOW: Record<LookupSource, string> = {
  index: "the dependents index",
  live: "live lookups (the per-shard read grant; the index is not readable)",
  none: "nothing: neither the provider's index consent nor the per-shard read grant is there",
};

export class LookupBook {
  readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly onChange: (() => void) | undefined;
  private readonly entries = new Map<string, Entry>();

  /** `onChange`: a type's source changed (the index report carries it to the rule's status). */
  constructor(opts: { clock?: Clock; logger?: Logger; onChange?: () => void } = {}) {
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger;
    this.onChange = opts.onChange;
  }

  learned(key: string): Learned | undefined {
    return this.entries.get(key);
  }

  /** The source of each type at its last lookup or probe (the metric). */
  sources(): ReadonlyMap<string, LookupSource> {
    return new Map([...this.entries].map(([k, e]) => [k, e.source]));
  }

  /** A lookup that began at `at` in `consumer` was answered by `source`. */
  looked(key: string, source: LookupSource, at: number, consumer: LogicalClusterName | undefined): void {
    this.set(key, { source, at, ...(consumer ? { consumer } : {}) });
  }

  /** A probe that started at `startedAt` found `source`; a lookup that began since knows better and stands. */
  probed(key: string, source: LookupSource, startedAt: number): void {
    const have = this.entries.get(key);
    if (have && have.at > startedAt) return;
    this.set(key, { ...have, source, at: startedAt });
  }

  /** Where to probe a type: the consumer workspace of its last lookup, else its provider's workspace. */
  probeTarget(key: string): ProbeTarget | undefined {
    const dependent = parseDependentTypeKey(key);
    if (!dependent) return undefined;
    const consumer = this.entries.get(key)?.consumer ?? dependent.exportCluster;
    return { key, path: dependentListPath({ consumer, dependent: { ...dependent, kind: "" } } as Lookup) };
  }

  private set(key: string, entry: Entry): void {
    const before = this.entries.get(key)?.source;
    this.entries.set(key, entry);
    if (before === entry.source) return;
    const log = entry.source === "none" ? this.logger?.warn : this.logger?.info;
    log?.call(
      this.logger,
      { type: key, source: entry.source, before },
      `deletes of this dependent type are checked by ${HOW[entry.source]}`,
    );
    this.onChange?.();
  }
}
