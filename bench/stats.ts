// Numbers: percentiles of raw samples, and Prometheus text-format histograms (scraped before and after a phase,
// subtracted, and turned into bucket-resolution quantile estimates the way histogram_quantile does).

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of sorted samples. */
function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? NaN;
}

export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN;
  return {
    n: s.length,
    p50: pct(s, 50),
    p95: pct(s, 95),
    p99: pct(s, 99),
    mean,
    min: s[0] ?? NaN,
    max: s.at(-1) ?? NaN,
  };
}

/** One sample line of the Prometheus text format: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const matches = (s: Sample, want: Record<string, string>): boolean =>
  Object.entries(want).every(([k, v]) => s.labels[k] === v);

/** Sum of a counter or gauge over the series matching `labels`. */
export function metricValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && matches(s, labels)).reduce((a, s) => a + s.value, 0);
}

/** Cumulative bucket counts (by upper bound, +Inf last), sum and count of one histogram, summed over series. */
export interface Histogram {
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

export function histogram(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Histogram {
  const byLe = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || !matches(s, labels)) continue;
    const le = s.labels["le"] === "+Inf" ? Infinity : Number(s.labels["le"]);
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return {
    buckets: [...byLe.entries()].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le),
    sum: metricValue(samples, `${name}_sum`, labels),
    count: metricValue(samples, `${name}_count`, labels),
  };
}

export function histogramDelta(after: Histogram, before: Histogram): Histogram {
  const prev = new Map(before.buckets.map((b) => [b.le, b.count]));
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (prev.get(b.le) ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** Like PromQL's histogram_quantile: linear interpolation inside the bucket that holds the q-th observation. */
export function histogramQuantile(h: Histogram, q: number): number {
  if (h.count <= 0) return NaN;
  const rank = q * h.count;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe; // beyond the last finite bucket: its bound is all we know
      const inBucket = b.count - prevCount;
      return inBucket <= 0 ? b.le : prevLe + (b.le - prevLe) * ((rank - prevCount) / inBucket);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

/** Histogram delta as milliseconds: count, mean (exact, from sum/count) and bucket-resolution p50/p95/p99. */
export interface HistogramSummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  /** Raw delta buckets (upper bound in seconds → cumulative count) for the JSON. */
  buckets: { le: number | "+Inf"; count: number }[];
}

export function summarizeHistogram(h: Histogram): HistogramSummary {
  return {
    count: h.count,
    meanMs: h.count > 0 ? (h.sum / h.count) * 1000 : NaN,
    p50Ms: histogramQuantile(h, 0.5) * 1000,
    p95Ms: histogramQuantile(h, 0.95) * 1000,
    p99Ms: histogramQuantile(h, 0.99) * 1000,
    buckets: h.buckets.map((b) => ({ le: b.le === Infinity ? "+Inf" : b.le, count: b.count })),
  };
}

export const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
export const now = (): bigint => process.hrtime.bigint();
