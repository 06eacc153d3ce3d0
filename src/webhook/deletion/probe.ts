// The read-access probe of `--lookup=auto`: where a dependent type's index is forbidden (no provider consent), whether
// a live lookup may read the type, found out without waiting for a DELETE, so the rule's status says from the start
// whether live lookups protect it (an installation coming from the Go original: its per-shard read grant) or nothing
// does (neither the consent nor the grant).
//
// The probe is one LIST with limit=1 of the type, the request a live lookup makes: same identity, verb, group and
// resource, through the same front-proxy. The per-shard grant is RBAC in each shard's system:admin, which kcp's
// bootstrap policy authorizer applies to every workspace on that shard, so it covers the consumer workspaces the live
// lookups read and the provider's own workspace alike. The probe lists in the consumer workspace of the type's last
// lookup or, before any, in the provider's workspace (the type key names it). kcp authorizes a request before it
// looks for the resource: 403 is "no read access"; 200, or 404 where the workspace does not serve the type, is "allowed".
// A shard the grant is missing on is only found by a lookup there (the probe sees one shard); that lookup says so.
//
// Cost: a type is probed when the decision says so (protection.ts: its index is forbidden and nothing, probe or lookup,
// told its source for PROBE_INTERVAL_MS); a failed probe is retried after PROBE_RETRY_MS. One pass runs at a time, PROBE_CONCURRENCY probes at once, each bounded by
// PROBE_TIMEOUT_MS, so many failing types queue rather than storm. The index reporter runs a pass before each report
// (index/report.ts), so the report of a newly forbidden type already carries what the probe found.
import type { Logger } from "pino";
import { isApiError, type RestClient } from "../../kcp/rest.ts";
import type { LookupSource } from "../../api/index-report.ts";
import type { Clock } from "../../util/clock.ts";
import { mapLimit } from "../../util/concurrency.ts";

export { PROBE_INTERVAL_MS } from "./protection.ts";
/** After a probe that failed otherwise than 403 (kcp unreachable, 5xx): the next try. */
export const PROBE_RETRY_MS = 30_000;
export const PROBE_TIMEOUT_MS = 5_000;
export const PROBE_CONCURRENCY = 4;

/** One LIST limit=1 at `path`: "live" when the webhook may list there, "none" on 403; throws on any other failure. */
export async function probeLiveRead(base: RestClient, path: string, signal?: AbortSignal): Promise<"live" | "none"> {
  try {
    await base.request("GET", path, {
      query: { limit: 1 },
      timeoutMs: PROBE_TIMEOUT_MS,
      ...(signal ? { signal } : {}),
    });
    return "live";
  } catch (err) {
    if (isApiError(err, 404)) return "live"; // authorized, and not served in this workspace
    if (isApiError(err, 403)) return "none";
    throw err;
  }
}

/** A type to probe and where (`/clusters/<c>/apis/<g>/<v>/<resource>`). */
export interface ProbeTarget {
  key: string;
  path: string;
}

export interface LookupProberOptions {
  probe: (path: string) => Promise<"live" | "none">;
  /** The types that need a probe now (protection.ts decides which). */
  targets: () => readonly ProbeTarget[];
  /** A probe that started at `startedAt` found `source`. */
  record: (key: string, source: LookupSource, startedAt: number) => void;
  clock: Clock;
  logger: Logger;
}

export class LookupProber {
  private readonly opts: LookupProberOptions;
  private readonly failedAt = new Map<string, number>();
  private current: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(opts: LookupProberOptions) {
    this.opts = opts;
  }

  /**
   * Probes every type that is due; resolves when they answered. Single-flight: a call during a pass gets one more pass
   * after it (shared by every such call), for types that turned due meanwhile.
   */
  run(): Promise<void> {
    if (!this.current) {
      this.current = this.pass().finally(() => (this.current = undefined));
      return this.current;
    }
    this.next ??= this.current.then(() => {
      this.next = undefined;
      return this.run();
    });
    return this.next;
  }

  private async pass(): Promise<void> {
    const now = this.opts.clock.now();
    const due = this.opts.targets().filter((t) => this.due(t.key, now));
    await mapLimit(due, PROBE_CONCURRENCY, (t) => this.probeOne(t));
  }

  /** A type the decision asks to probe, unless its last probe failed less than PROBE_RETRY_MS ago. */
  private due(key: string, now: number): boolean {
    const failed = this.failedAt.get(key);
    return failed === undefined || now - failed >= PROBE_RETRY_MS;
  }

  private async probeOne(t: ProbeTarget): Promise<void> {
    const startedAt = this.opts.clock.now();
    try {
      const source = await this.opts.probe(t.path);
      this.failedAt.delete(t.key);
      this.opts.record(t.key, source, startedAt);
    } catch (err) {
      this.failedAt.set(t.key, startedAt);
      const msg = err instanceof Error ? err.message : String(err);
      this.opts.logger.warn({ type: t.key, err: msg }, "cannot probe whether live lookups may read this type");
    }
  }
}
