// Requests open at the webhook by origin (the caller's address), pool (deletes, rules) and stage (receiving the body,
// queued for a slot, deciding), as one gauge. An origin has its own series only while it has requests open, and at
// most MAX_ORIGIN_LABELS origins at once do; the others share "other". So a flood from many addresses cannot grow the
// series without bound, and an operator still sees which caller holds the connections.
import { Gauge, type Registry } from "prom-client";

export type Stage = "receiving" | "queued" | "deciding";
export type PoolName = "deletes" | "rules";

export const MAX_ORIGIN_LABELS = 32;
const STAGES: readonly Stage[] = ["receiving", "queued", "deciding"];
const POOLS: readonly PoolName[] = ["deletes", "rules"];

/** One request's place in the gauge: move it between stages, and end it once it is answered. */
export interface OpenRequest {
  stage(stage: Stage): void;
  end(): void;
}

export interface OpenRequests {
  begin(remoteAddress: string | undefined, pool: PoolName): OpenRequest;
}

/** The gauge `dependency_webhook_requests_open`, registered on `registry`; without one, nothing is counted. */
export function createOpenRequests(registry?: Registry): OpenRequests {
  const gauge = registry
    ? new Gauge({
        name: "dependency_webhook_requests_open",
        help: `Requests open by origin (caller address; beyond ${MAX_ORIGIN_LABELS} at once, "other"), pool (deletes, rules) and stage (receiving, queued, deciding).`,
        labelNames: ["origin", "pool", "stage"] as const,
        registers: [registry],
      })
    : undefined;
  const refs = new Map<string, number>(); // open requests of each origin that has its own series
  const labelFor = (address: string): string => {
    if (!refs.has(address) && refs.size >= MAX_ORIGIN_LABELS) return "other";
    refs.set(address, (refs.get(address) ?? 0) + 1);
    return address;
  };
  const unref = (label: string): void => {
    if (label === "other") return;
    const n = (refs.get(label) ?? 1) - 1;
    if (n > 0) return void refs.set(label, n);
    refs.delete(label);
    for (const pool of POOLS) for (const stage of STAGES) gauge?.remove({ origin: label, pool, stage });
  };
  return {
    begin(remoteAddress, pool) {
      const origin = labelFor((remoteAddress ?? "unknown").replace(/^::ffff:/, ""));
      let current: Stage | undefined;
      const move = (next: Stage | undefined): void => {
        if (current) gauge?.dec({ origin, pool, stage: current });
        if (next) gauge?.inc({ origin, pool, stage: next });
        current = next;
      };
      let ended = false;
      return {
        stage: (stage) => !ended && move(stage),
        end() {
          if (ended) return;
          ended = true;
          move(undefined);
          unref(origin);
        },
      };
    },
  };
}
