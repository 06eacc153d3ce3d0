// Requests open at the webhook by origin (the caller's address), pool (deletes, rules) and stage (receiving the body,
// queued for a slot, deciding), as one gauge. An origin has its own series only while it has requests open, and at
// most MAX_ORIGIN_LABELS origins at once do; the others share "other". So a flood from many addresses cannot grow the
// series without bound, and an operator still sees which caller holds the connections.
import { Gauge, type Registry } from "prom-client";

export type Stage = "receiving" | "queued" | "deciding";
export type PoolName = "deletes" | "rules";

export const MAX_ORIGIN_LABELS = 32;

/** One request's place in the gauge: move it between stages, and end it once it is answered. */
export interface OpenRequest {
  stage(stage: Stage): void;
  end(): void;
}

export interface OpenRequests {
  begin(remoteAddress: string | undefined, pool: PoolName): OpenRequest;
}

/**
 * The gauge `dependency_webhook_requests_open`, registered on `registry`; without one, nothing is counted. A request
 * moves plain counters (a few map updates); the gauge reads them when scraped, so a review pays no metric work here.
 */
export function createOpenRequests(registry?: Registry): OpenRequests {
  if (!registry) return { begin: () => UNCOUNTED };
  // Each origin with its own series, and "other": its open requests and its series by pool and stage, as the gauge
  // shows them (created at the first request in that stage, kept, possibly at 0, while the origin has requests open;
  // "other"'s are kept).
  const origins = new Map<string, Origin>();
  new Gauge({
    name: "dependency_webhook_requests_open",
    help: `Requests open by origin (caller address; beyond ${MAX_ORIGIN_LABELS} at once, "other"), pool (deletes, rules) and stage (receiving, queued, deciding).`,
    labelNames: ["origin", "pool", "stage"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [origin, o] of origins)
        for (const { pool, stage, open } of o.series.values()) this.set({ origin, pool, stage }, open);
    },
  });
  /** The origin `address` counts under (its own, or "other" past the cap), with one more request open. */
  const enter = (address: string): [string, Origin] => {
    let o = origins.get(address);
    let label = address;
    if (!o) {
      // "other" does not count towards the origins that have their own series.
      const own = origins.size - (origins.has("other") ? 1 : 0);
      if (own >= MAX_ORIGIN_LABELS) label = "other";
      o = origins.get(label) ?? { refs: 0, series: new Map() };
      origins.set(label, o);
    }
    o.refs++;
    return [label, o];
  };
  return {
    begin(remoteAddress, pool) {
      const address = remoteAddress ?? "unknown";
      const [label, o] = enter(address.startsWith("::ffff:") ? address.slice(7) : address);
      return new Tracked(origins, label, o, pool);
    },
  };
}

/** One request's place in its origin's series: a class, not closures, as it is made once per review. */
class Tracked implements OpenRequest {
  private current: Stage | undefined;
  private ended = false;
  private readonly origins: Map<string, Origin>;
  private readonly label: string;
  private readonly origin: Origin;
  private readonly pool: PoolName;
  /** The series keys of this pool, built once (a request moves through up to three stages). */
  private readonly keys: Record<Stage, string>;

  constructor(origins: Map<string, Origin>, label: string, origin: Origin, pool: PoolName) {
    this.origins = origins;
    this.label = label;
    this.origin = origin;
    this.pool = pool;
    this.keys = SERIES_KEYS[pool];
  }

  stage(stage: Stage): void {
    if (!this.ended) this.move(stage);
  }

  /** Leaves the stage it is in, and the origin: which loses its series with its last open request. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.move(undefined);
    if (--this.origin.refs === 0 && this.label !== "other") this.origins.delete(this.label);
  }

  private move(next: Stage | undefined): void {
    const series = this.origin.series;
    if (this.current) (series.get(this.keys[this.current]) as { open: number }).open--;
    if (next) {
      const s = series.get(this.keys[next]);
      if (s) s.open++;
      else series.set(this.keys[next], { pool: this.pool, stage: next, open: 1 });
    }
    this.current = next;
  }
}

const seriesKeys = (pool: PoolName): Record<Stage, string> => ({
  receiving: `${pool} receiving`,
  queued: `${pool} queued`,
  deciding: `${pool} deciding`,
});
const SERIES_KEYS: Record<PoolName, Record<Stage, string>> = {
  deletes: seriesKeys("deletes"),
  rules: seriesKeys("rules"),
};

/** An origin's open requests, and its series by `<pool> <stage>` (SERIES_KEYS). */
interface Origin {
  refs: number;
  series: Map<string, { pool: PoolName; stage: Stage; open: number }>;
}

const UNCOUNTED: OpenRequest = { stage: () => undefined, end: () => undefined };
