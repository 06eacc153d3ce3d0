// Resolves workspace paths (`root:org:team`) to logical cluster names by reading each Workspace object in its parent.
// Cached with a TTL and dropped on demand, so a workspace deleted and recreated under the same path (a new logical
// cluster) is found again instead of being written to forever under its old name.
//
// Two kinds of failure, because callers must treat them differently: a definite answer ("not found", "being
// deleted") means the path names no workspace and protects nothing; a transient one (no permission, kcp unreachable)
// says nothing about the workspace, so the last good answer is kept and returned, marked `stale`.
import type { LogicalClusterName, WorkspacePath } from "../api/types.ts";
import { logicalClusterName, parseLogicalClusterName, workspacePath } from "../api/wire.ts";
import { realClock, type Clock } from "../util/clock.ts";
import { isApiError, type RestClient } from "./rest.ts";

/** The root workspace has no Workspace object; its logical cluster is named like its path. */
const ROOT = logicalClusterName("root");

/**
 * `transient` marks failures that say nothing about the workspace itself (no permission, network, server error):
 * callers must not conclude the workspace is gone and, e.g., delete what they installed there.
 */
export type Resolution =
  | { ok: true; cluster: LogicalClusterName; /** Why this is the last good answer, not a fresh one. */ stale?: string }
  | { ok: false; reason: string; transient?: boolean };

interface Workspace {
  metadata: { name: string; deletionTimestamp?: string };
  spec?: { cluster?: string; URL?: string };
  status?: { phase?: string };
}

export interface WorkspaceResolverOptions {
  /** Client rooted at the kcp base URL (front-proxy or single shard), without `/clusters/`. */
  base: RestClient;
  /** How long a resolved path is trusted before it is read again. */
  ttlMs?: number;
  /** Ages the cache (default the real clock). */
  clock?: Clock;
}

export class WorkspaceResolver {
  private readonly cache = new Map<string, { cluster: LogicalClusterName; at: number }>();
  /** Last successful answer per path, kept through transient failures (not through definite ones). */
  private readonly lastGood = new Map<string, LogicalClusterName>();
  private readonly base: RestClient;
  private readonly ttlMs: number;
  private readonly clock: Clock;

  constructor(opts: WorkspaceResolverOptions) {
    this.base = opts.base;
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.clock = opts.clock ?? realClock;
  }

  async resolve(path: WorkspacePath): Promise<Resolution> {
    const segments = path.split(":");
    if (segments.length === 1) {
      return segments[0] === "root"
        ? { ok: true, cluster: ROOT }
        : { ok: false, reason: `workspace path ${path} does not start at root` };
    }
    const hit = this.cache.get(path);
    if (hit && this.clock.now() - hit.at < this.ttlMs) return { ok: true, cluster: hit.cluster };

    const result = await this.read(path, segments);
    if (result.ok) {
      this.cache.set(path, { cluster: result.cluster, at: this.clock.now() });
      this.lastGood.set(path, result.cluster);
      return result;
    }
    this.cache.delete(path);
    if (!result.transient) {
      this.lastGood.delete(path);
      return result;
    }
    const last = this.lastGood.get(path);
    return last ? { ok: true, cluster: last, stale: result.reason } : result;
  }

  private async read(path: WorkspacePath, segments: string[]): Promise<Resolution> {
    // A prefix of a workspace path is one too.
    const parent = workspacePath(segments.slice(0, -1).join(":"));
    const name = segments[segments.length - 1] ?? "";
    let ws: Workspace;
    try {
      ws = await this.base.get<Workspace>(`/clusters/${parent}/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`);
    } catch (err) {
      if (isApiError(err, 404)) return { ok: false, reason: `workspace ${path} not found` };
      if (isApiError(err, 403)) {
        // kcp answers 403 for anything inside a workspace that does not exist: a missing parent is a definite answer.
        const up = parent === "root" ? undefined : await this.resolve(parent);
        if (up && !up.ok && !up.transient) return { ok: false, reason: `workspace ${path} not found (${up.reason})` };
        return {
          ok: false,
          transient: true,
          reason: `not allowed to read workspace ${path}: grant get on tenancy.kcp.io workspaces and the access verb in ${parent}`,
        };
      }
      return { ok: false, transient: true, reason: `reading workspace ${path}: ${(err as Error).message}` };
    }
    if (ws.metadata.deletionTimestamp) return { ok: false, reason: `workspace ${path} is being deleted` };
    const cluster = ws.spec?.cluster;
    if (!cluster)
      return {
        ok: false,
        reason: `workspace ${path} has no logical cluster yet (phase ${ws.status?.phase ?? "unknown"})`,
      };
    const logical = parseLogicalClusterName(cluster);
    if (!logical) return { ok: false, reason: `workspace ${path} names ${JSON.stringify(cluster)} as its cluster` };
    return { ok: true, cluster: logical };
  }

  /** Forgets a path and everything below it, e.g. after a write to its logical cluster failed. */
  invalidate(path: string): void {
    for (const key of this.cache.keys()) if (key === path || key.startsWith(`${path}:`)) this.cache.delete(key);
  }

  /** Forgets every path that resolved to this logical cluster. */
  invalidateCluster(cluster: string): void {
    for (const [key, v] of this.cache) if (v.cluster === cluster) this.invalidate(key);
  }
}
