// The platform's shards for local targets (src/controller/local-targets-shards.ts says why): the Shard objects
// (core.kcp.io/v1alpha1, cluster-scoped, in root, which only the platform writes) name every shard's virtual-workspace
// server in spec.virtualWorkspaceURL, from which kcp builds every APIExport endpoint on that shard (kcp v0.30.0's
// apiexportendpointsliceurls controller; a shard without one is skipped there too).
import type { Logger } from "pino";
import { SHARDS_GRANT, virtualWorkspaceBase, type PlatformShards } from "../controller/local-targets-shards.ts";
import { isApiError, type RestClient } from "./rest.ts";

export const SHARDS_PATH = "/apis/core.kcp.io/v1alpha1/shards";

interface Shard {
  spec?: { virtualWorkspaceURL?: unknown };
}

/** Every shard's virtual-workspace base, sorted and unique; a shard without a usable one is left out. */
export function shardBases(shards: readonly Shard[]): string[] {
  const bases = new Set<string>();
  for (const s of shards) {
    const base = virtualWorkspaceBase(s.spec?.virtualWorkspaceURL);
    if (base !== undefined) bases.add(base);
  }
  return [...bases].sort();
}

/**
 * Lists root's Shards when a local-targets pass asks (one GET, only while there are local targets). The last good list
 * stands in for a list that fails (a shard once seen is still a shard); each new failure is logged once.
 */
export class ShardList {
  private readonly root: RestClient;
  private readonly logger: Logger;
  private lastGood: string[] | undefined;
  private lastProblem = "";

  /** `root`: a client for `<base>/clusters/root`. */
  constructor(root: RestClient, logger: Logger) {
    this.root = root;
    this.logger = logger;
  }

  async read(): Promise<PlatformShards> {
    try {
      this.lastGood = shardBases((await this.root.listAll<Shard>(SHARDS_PATH)).items);
      this.lastProblem = "";
      return { kind: "listed", bases: this.lastGood };
    } catch (err) {
      const forbidden = isApiError(err, 403) || isApiError(err, 401);
      const message = isApiError(err) ? `${err.status} ${err.reason}` : String(err);
      if (this.lastProblem !== message)
        this.logger.warn(
          { err: String(err), ...(forbidden ? { hint: `grant list on shards: ${SHARDS_GRANT}` } : {}) },
          "cannot list the platform's shards: local targets reach only shards where a provider binds the dep-ctrl export",
        );
      this.lastProblem = message;
      if (this.lastGood) return { kind: "listed", bases: this.lastGood };
      return forbidden ? { kind: "forbidden" } : { kind: "failed", message };
    }
  }
}
