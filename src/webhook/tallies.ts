// Metric updates kept as plain numbers and handed to prom-client when a metric is read (its `collect`): what a review
// pays for its counters and histograms is a map or array update, not prom-client's label checks and hashing.
import type { Counter, Histogram } from "prom-client";

/**
 * Increments of a labelled counter kept as plain counts and added to it when it is read (its `collect`): a review
 * pays one map update, not prom-client's label validation and hashing. Same series and values at every scrape.
 */
export class Tally<L extends string> {
  private readonly pending = new Map<string, { labels: () => Partial<Record<L, string>>; n: number }>();

  /** Counts one of the series `key` names; `labels` gives its labels, read only when the counter is. */
  add(key: string, labels: () => Partial<Record<L, string>>): void {
    const p = this.pending.get(key);
    if (p) p.n++;
    else this.pending.set(key, { labels, n: 1 });
  }

  /** Adds the counts to `counter` (from its collect) and starts over. */
  flush(counter: Counter<L>): void {
    for (const { labels, n } of this.pending.values()) counter.inc(labels(), n);
    this.pending.clear();
  }
}

/** Observations waiting at most before they are handed to their histogram, whether or not it is read. */
export const MAX_PENDING_OBSERVATIONS = 1024;

/**
 * Observations of a histogram kept as plain numbers, by the value of its one label, and handed to it in one batch when
 * it is read (its `collect`) or once MAX_PENDING_OBSERVATIONS wait: a review pays an array push, not prom-client's
 * label validation, hashing and bucket search, which at kcp's pace (a review every few ms, the code cold each time)
 * cost more than the same work done a thousand at a time. Same series and values at every scrape.
 */
export class Observations<L extends string> {
  private readonly pending = new Map<string, { labels: Partial<Record<L, string>>; values: number[] }>();
  private count = 0;
  private readonly labelsOf: (key: string) => Partial<Record<L, string>>;
  private target: Histogram<L> | undefined;

  /** `labelsOf` gives the labels of a key (the label's value), read once per key. */
  constructor(labelsOf: (key: string) => Partial<Record<L, string>>) {
    this.labelsOf = labelsOf;
  }

  /** The histogram the observations go to; returns it. */
  into(histogram: Histogram<L>): Histogram<L> {
    this.target = histogram;
    return histogram;
  }

  /** Observes `seconds` in the series `key` names. */
  observe(key: string, seconds: number): void {
    const p = this.pending.get(key);
    if (p) p.values.push(seconds);
    else this.pending.set(key, { labels: this.labelsOf(key), values: [seconds] });
    if (++this.count >= MAX_PENDING_OBSERVATIONS) this.flush();
  }

  /** Hands the waiting observations to the histogram (called from its collect). */
  flush(): void {
    const histogram = this.target;
    if (!histogram || this.count === 0) return;
    for (const p of this.pending.values()) {
      for (const v of p.values) histogram.observe(p.labels, v);
      p.values.length = 0;
    }
    this.count = 0;
  }

  /** Observations not yet handed to the histogram. */
  get waiting(): number {
    return this.count;
  }
}
