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
  const enter = (label: string) => {
    const o: Origin = origins.get(label) ?? { refs: 0, series: new Map() };
    o.refs++;
    origins.set(label, o);
    return o;
  };
  const originOf = (address: string) => {
    // "other" does not count towards the origins that have their own series.
    const own = origins.size - (origins.has("other") ? 1 : 0);
    const label = !origins.has(address) && own >= MAX_ORIGIN_LABELS ? "other" : address;
    return { label, o: enter(label) };
  };
  return {
    begin(remoteAddress, pool) {
      const address = remoteAddress ?? "unknown";
      const { label, o } = originOf(address.startsWith("::ffff:") ? address.slice(7) : address);
      // The series keys of this pool, built once (a request moves through up to three stages).
      const keys = SERIES_KEYS[pool];
      let current: Stage | undefined;
      const move = (next: Stage | undefined): void => {
        if (current) (o.series.get(keys[current]) as { open: number }).open--;
        if (next) {
          const s = o.series.get(keys[next]);
          if (s) s.open++;
          else o.series.set(keys[next], { pool, stage: next, open: 1 });
        }
        current = next;
      };
      let ended = false;
      return {
        stage: (stage) => !ended && move(stage),
        end() {
          if (ended) return;
          ended = true;
          move(undefined);
          if (--o.refs === 0 && label !== "other") origins.delete(label);
        },
      };
    },
  };
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
