// Local-target passes on events, not only at the resync: a consumer that binds a dependent export and accepts its
// validatingwebhookconfigurations claim, or that deletes or edits our configuration in its workspace, gets a pass
// within the work loop's debounce, so a new consumer's Secrets are unprotected for seconds, not up to a resync.
// Through each dependent export's virtual workspace on each shard the pass visited: one watch of the export's
// APIBindings, and one of our configurations once the export claims them. So watches are bounded by exports × shards,
// never by consumers, and keep no objects: an event only enqueues a pass, which reads everything again
// (local-targets-sync.ts). The set follows each pass (level-triggered): watches start for new exports and shards and
// stop for exports without rules and for those whose virtual workspace refused (403, 404 or 500 "API export not
// found": the export or the grant is gone), which only the resync reads again; a failing watch otherwise backs off
// (src/kcp/endpoint-stream.ts). Only the leader watches: losing the lease closes them all (release).
import type { Logger } from "pino";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../api/wire.ts";
import { Informer, type EndpointStore, type KubeObject } from "../kcp/informer.ts";
import type { RestClient } from "../kcp/rest.ts";
import type { Clock } from "../util/clock.ts";
import { LOCAL_TARGETS_LABEL, type DependentExport } from "./local-targets.ts";
import { exportEndpoint } from "./local-targets-shards.ts";
import { APIBINDINGS } from "./local-targets-read.ts";

/** What one pass read of a dependent export with local-target rules, all shards taken together. */
export type ExportReadState =
  /** Its virtual workspace answered 403, 404 or 500 "API export not found" (exportGone): export or grant gone. */
  | "gone"
  /** A failure that may pass (5xx, timeout): whether it claims is not known this time. */
  | "failed"
  /** Read; no binding shows the export claiming validatingwebhookconfigurations (then kcp serves none: 404). */
  | "unclaimed"
  | "claimed";

export interface ExportReadout {
  export: DependentExport;
  state: ExportReadState;
}

export type WatchedResource = "bindings" | "configurations";

/** List+watch streams over a set of endpoints: src/kcp/informer.ts's Informer, a fake in tests. */
export interface EndpointWatches {
  setEndpoints(urls: readonly string[]): void;
  endpoints(): string[];
  stop(): void;
}

/**
 * The export endpoints to watch on each shard (the pass's shard bases, local-targets-shards.ts): bindings unless the
 * export is gone; our configurations where it claims them, and where a read that may pass does not say, as before
 * (`configurations` is the current set).
 */
export function watchPlan(
  exports: readonly ExportReadout[],
  shards: readonly string[],
  configurations: ReadonlySet<string>,
): Record<WatchedResource, string[]> {
  const plan: Record<WatchedResource, string[]> = { bindings: [], configurations: [] };
  for (const { export: e, state } of exports) {
    if (state === "gone") continue;
    for (const url of shards.map((base) => exportEndpoint(base, e))) {
      plan.bindings.push(url);
      if (state === "claimed" || (state === "failed" && configurations.has(url))) plan.configurations.push(url);
    }
  }
  return plan;
}

export class LocalTargetWatches {
  private readonly watches: Record<WatchedResource, EndpointWatches>;

  /** `open` makes one resource's watch set. */
  constructor(opts: { open: (resource: WatchedResource) => EndpointWatches }) {
    this.watches = { bindings: opts.open("bindings"), configurations: opts.open("configurations") };
  }

  /** Starts and stops watches to match what the pass read (every export with local-target rules, none else), on the
   * shards it visited. */
  follow(exports: readonly ExportReadout[], shards: readonly string[]): void {
    const plan = watchPlan(exports, shards, new Set(this.watches.configurations.endpoints()));
    this.watches.bindings.setEndpoints(plan.bindings);
    this.watches.configurations.setEndpoints(plan.configurations);
  }

  /**
   * Closes every watch, for a replica that lost the lease: a standby runs no passes, so their events would run
   * nothing. The watches stay usable: the next pass this replica runs as leader opens them again (`follow`).
   */
  release(): void {
    this.watches.bindings.setEndpoints([]);
    this.watches.configurations.setEndpoints([]);
  }

  /** Watches open now: at most two per dependent export and shard. */
  count(): number {
    return this.watches.bindings.endpoints().length + this.watches.configurations.endpoints().length;
  }

  stop(): void {
    this.watches.bindings.stop();
    this.watches.configurations.stop();
  }
}

/** A store that keeps nothing: the pass lists for itself, so an export's thousands of bindings are not held twice. */
function keepNothing(): EndpointStore<KubeObject, never> {
  return { set: () => undefined, delete: () => undefined, values: () => [], size: 0 };
}

const WATCHED: Record<WatchedResource, { path: string; query?: Record<string, string> }> = {
  bindings: { path: `/clusters/*${APIBINDINGS}` },
  // Every local-target configuration the view shows (label present): another export's only costs a pass.
  configurations: { path: `/clusters/*${WEBHOOK_CONFIGURATIONS_PATH}`, query: { labelSelector: LOCAL_TARGETS_LABEL } },
};

/** The watches as the project's informers: each event, first list and failing turn calls `onChange`. */
export function localTargetWatchesOf(opts: {
  client: RestClient;
  logger: Logger;
  onChange: () => void;
  /** Times the failed streams' backoff (default the real clock). */
  clock?: Clock;
}): LocalTargetWatches {
  const { client, logger, onChange, clock } = opts;
  const open = (resource: WatchedResource): EndpointWatches =>
    new Informer<KubeObject, never>({
      client,
      ...WATCHED[resource],
      newStore: keepNothing,
      logger: logger.child({ informer: `local-target ${resource}` }),
      onChange,
      ...(clock ? { clock } : {}),
    });
  return new LocalTargetWatches({ open });
}
