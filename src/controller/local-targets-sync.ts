// The I/O edge of local targets (local-targets.ts decides): per dependent export with local targets, read its
// bindings and our configurations through its virtual workspace on every shard (local-targets-shards.ts says which),
// apply the planned writes there, and answer each rule's coverage; the exports recorded in the dep-ctrl workspace
// whose rules are gone are visited too, to prune. Read every pass (one GET of the record, one list of root's Shards;
// two lists per export and shard, a page at a time: local-targets-read.ts); a steady state writes nothing.
// What each pass read tells local-targets-watch.ts which exports to watch, so a new consumer needs no resync.
import type { Logger } from "pino";
import type { ParsedRule } from "../api/rule.ts";
import type { LogicalClusterName } from "../api/types.ts";
import { isApiError } from "../kcp/rest.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";
import {
  coverageOf,
  exportKey,
  localConfiguration,
  localTargetSets,
  planLocalWrites,
  type DependentExport,
  type ExportView,
  type LocalCoverage,
} from "./local-targets.ts";
import { exportsToVisit, recordAfter, recordBefore, type PruneOutcome } from "./local-targets-visits.ts";
import { shardsToVisit, type PlatformShards, type ShardsToVisit } from "./local-targets-shards.ts";
import { ExportRecordConfigMap, ExportRecordInMemory, type ExportRecord } from "../kcp/local-targets-record.ts";
import type { RestClient } from "../kcp/rest.ts";
import { ShardList } from "../kcp/shards.ts";
import type { ControllerMetrics } from "./metrics.ts";
import type { ExportReadout } from "./local-targets-watch.ts";
import { readExport, type Read } from "./local-targets-read.ts";
import { send, type ClusterClient } from "./writer.ts";

export interface LocalTargetsDeps {
  /** The dep-ctrl export's virtual workspace URLs, one per shard where it is bound: every export's is beside it. */
  endpoints: () => string[];
  /** Root's Shards (src/kcp/shards.ts), for the shards where no provider binds the dep-ctrl export. Unset: none. */
  platformShards?: { read(): Promise<PlatformShards> } | undefined;
  /** A client for `<endpoint>/clusters/<cluster>`; `*` (cast) lists across the export's consumers. */
  clientFor: (endpoint: string, cluster: LogicalClusterName) => ClusterClient;
  webhookBaseUrl: string;
  mayWrite: () => boolean;
  /**
   * The exports where configurations may be installed, kept where only the controller writes (a ConfigMap in the
   * dep-ctrl workspace, src/kcp/local-targets-record.ts). Unset: in this process's memory (tests; lost on restart).
   */
  localTargetsRecord?: ExportRecord | undefined;
  /** Told after each pass what it read of the exports with rules, and on which shards, to watch them there (leader). */
  localTargetWatches?:
    { follow(exports: readonly ExportReadout[], shards: readonly string[]): void; release(): void } | undefined;
  logger: Logger;
  metrics: ControllerMetrics;
}

/** What the reconciler passes through to local targets from its own deps. */
export type LocalTargetsEdges = Pick<LocalTargetsDeps, "localTargetsRecord" | "localTargetWatches" | "platformShards">;

/** The edges local targets read and keep in production: the record in the dep-ctrl workspace, and root's Shards. */
export function localTargetsEdges(
  conn: { base: RestClient; workspaceClient: RestClient },
  logger: Logger,
): Pick<LocalTargetsDeps, "localTargetsRecord" | "platformShards"> {
  return {
    localTargetsRecord: new ExportRecordConfigMap(conn.workspaceClient),
    platformShards: new ShardList(conn.base.forCluster("root"), logger),
  };
}

function readState(read: Read): ExportReadout["state"] {
  if ("kind" in read) return read.kind === "unreadable" && read.gone ? "gone" : "failed";
  return read.view.claimed ? "claimed" : "unclaimed";
}

export class LocalTargets {
  private readonly deps: LocalTargetsDeps;
  private readonly record: ExportRecord;

  constructor(deps: LocalTargetsDeps) {
    this.deps = deps;
    this.record = deps.localTargetsRecord ?? new ExportRecordInMemory();
  }

  /**
   * Installs every export's configuration where its consumers consented, and prunes it in the consumers of every
   * recorded export no rule asks for any more (level-triggered: the record says where to look); ruleKeyString →
   * coverage.
   */
  async sync(
    obs: { rules: readonly { parsed: ParsedRule }[]; caBundle?: string },
    skip: (rule: ParsedRule) => boolean,
  ): Promise<Map<string, LocalCoverage>> {
    const coverage = new Map<string, LocalCoverage>();
    const sets = localTargetSets(
      obs.rules.map((r) => r.parsed),
      skip,
    );
    // A record that cannot be read or written costs pruning, not protection: installs go on, and it is not
    // rewritten from a partial picture (that would forget exports). Counted and logged: see the RBAC for it.
    const recorded = await this.recordSafely(() => this.record.read());
    // Recorded before anything is installed: a pass that stops half-way leaves no configuration unrecorded.
    const grown = recorded !== undefined && this.deps.mayWrite() && (await this.keep(recordBefore(sets, recorded)));
    const visits = exportsToVisit(sets, recorded ?? []);
    const pruned = new Map<string, PruneOutcome>();
    const readouts: ExportReadout[] = [];
    const shards = visits.length > 0 ? await this.shards() : { bases: [] };
    for (const visit of visits) {
      const want = visit.set && localConfiguration(visit.set, this.deps.webhookBaseUrl, obs.caBundle);
      const read = await readExport(this.deps, visit.export, shards, want);
      if (!visit.set) {
        pruned.set(exportKey(visit.export), await this.prune(read));
        continue;
      }
      readouts.push({ export: visit.export, state: readState(read) });
      const answer = "kind" in read ? read : coverageOf(visit.set, read.view, await this.write(want, read));
      for (const rule of visit.set.rules) coverage.set(rule, answer);
    }
    if (grown && this.deps.mayWrite()) await this.keep(recordAfter(visits, pruned));
    // Only the leader watches (a standby runs no passes): a pass that lost the lease on its way closes them.
    if (this.deps.mayWrite()) this.deps.localTargetWatches?.follow(readouts, shards.bases);
    else this.deps.localTargetWatches?.release();
    return coverage;
  }

  /** The shards this pass visits: the dep-ctrl export's and, where the controller may list them, the platform's. */
  private async shards(): Promise<ShardsToVisit> {
    const platform = await this.deps.platformShards?.read();
    if (platform?.kind === "failed") this.deps.metrics.errors.inc({ reason: "local_targets_shards" });
    return shardsToVisit(this.deps.endpoints(), platform);
  }

  /** Writes the record; whether it was written. */
  private async keep(exports: readonly DependentExport[]): Promise<boolean> {
    return (await this.recordSafely(() => this.record.write(exports).then(() => true))) === true;
  }

  private async recordSafely<T>(io: () => Promise<T>): Promise<T | undefined> {
    try {
      return await io();
    } catch (err) {
      this.deps.metrics.errors.inc({ reason: "local_targets_record" });
      this.deps.logger.warn({ err: String(err) }, "cannot read or write the record of local-target exports");
      return undefined;
    }
  }

  /** Deletes every configuration of an export no rule asks for; what is left decides whether it stays recorded. */
  private async prune(read: Read): Promise<PruneOutcome> {
    if ("kind" in read) return read.kind === "unreadable" && read.gone ? "gone" : "left";
    return (await this.write(undefined, read)).size === 0 ? "pruned" : "left";
  }

  /** The planned writes; the consumers where one failed. */
  private async write(
    want: ValidatingWebhookConfiguration | undefined,
    read: { view: ExportView; endpointOf: Map<LogicalClusterName, string> },
  ): Promise<Set<LogicalClusterName>> {
    const failed = new Set<LogicalClusterName>();
    for (const action of planLocalWrites(want, read.view)) {
      const endpoint = read.endpointOf.get(action.cluster);
      if (!endpoint || !this.deps.mayWrite()) {
        failed.add(action.cluster);
        continue;
      }
      try {
        await send(this.deps.clientFor(endpoint, action.cluster), action);
        this.deps.metrics.writes.inc({ action: action.kind });
        this.deps.logger.info(
          { cluster: action.cluster, reason: action.reason },
          `${action.kind}d local-target configuration`,
        );
      } catch (err) {
        if (action.kind === "delete" && isApiError(err, 404)) continue;
        failed.add(action.cluster);
        this.deps.metrics.errors.inc({ reason: "write_webhook_configuration" });
        this.deps.logger.warn(
          { cluster: action.cluster, err: String(err) },
          "could not write local-target configuration",
        );
      }
    }
    return failed;
  }
}
