// Resolves workspace paths (`root:org:team`) to logical cluster names by reading each Workspace object in its parent.
// Cached with a TTL and dropped on demand, so a workspace deleted and recreated under the same path (a new logical
// cluster) is found again instead of being written to forever under its old name.
//
// Two kinds of failure, because callers must treat them differently: a definite answer ("not found", "being
// deleted") means the path names no workspace and protects nothing; a transient one (no permission, kcp unreachable)
// says nothing about the workspace, so the last good answer is kept and returned, marked `stale`.
//
// What one path may cost kcp is bounded, because any rule author picks the paths: every answer is cached (a definite
// one as long as a good one; a transient one, or a workspace still being set up, with growing backoff), one read per
// path runs at a time (callers join it), a path below a cached "not found" is answered without a read, a 403 walks up
// one level per segment only until a cached answer, and paths deeper than the cap are refused unread. So a path of n
// segments costs at most n - 1 GETs per walk, and each prefix is read at most once per `ttlMs` while its answer is
// definite or good.
//
// What the cache may cost this process is bounded too, because rule authors pick the paths (a dry-run apply of a rule
// with fresh paths adds up to paths × segments answers): answers and last good clusters are each kept for at most
// `maxEntries` paths, the least recently used forgotten first, at a constant cost per answer whatever the size. A
// forgotten answer costs one read when its path is asked again.
import type { LogicalClusterName, WorkspacePath } from "../api/types.ts";
import { logicalClusterName, MAX_PROVIDER_PATH_SEGMENTS, parseLogicalClusterName, workspacePath } from "../api/wire.ts";
import { realClock, type Clock } from "../util/clock.ts";
import { Lru } from "../util/lru.ts";
import { isApiError, type RestClient } from "./rest.ts";

/** The root workspace has no Workspace object; its logical cluster is named like its path. */
const ROOT = logicalClusterName("root");
/** The first missing level's reason, not one "not found (...)" per level in between. */
function causeOf(reason: string): string {
  return /^workspace \S+ not found \((.*)\)$/s.exec(reason)?.[1] ?? reason;
}

/** Definite answers about a workspace still being set up: read again as soon as a transient failure would be. */
const SETTLING = new WeakSet<Resolution>();

/**
 * Paths whose answer (and, apart, last good cluster) is kept: 512 rules' worth of 32 distinct paths, more where their
 * prefixes are shared. Measured about 580 bytes of heap per path of some 25 characters with both, so about 9 MiB full.
 */
export const DEFAULT_MAX_CACHED_PATHS = 16_384;

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
  base: Pick<RestClient, "get">;
  /** How long a resolved path, or a definite "not found", is trusted before it is read again (default 60 s). */
  ttlMs?: number;
  /** First wait before a transient failure is read again; it doubles per failure up to `ttlMs` (default 5 s). */
  retryMs?: number;
  /** Longest path resolved; deeper ones are refused without a read (default MAX_PROVIDER_PATH_SEGMENTS). */
  maxSegments?: number;
  /** Most paths whose answer is kept, and apart most whose last good cluster is (default DEFAULT_MAX_CACHED_PATHS). */
  maxEntries?: number;
  /** Ages the cache (default the real clock). */
  clock?: Clock;
}

/** One path's last fresh answer, and when it may be read again. */
interface Entry {
  answer: Resolution;
  until: number;
  /** Transient failures in a row, for the backoff. */
  failures: number;
}

export class WorkspaceResolver {
  private readonly entries: Lru<string, Entry>;
  /** Reads running now, joined by every caller asking for the same path meanwhile. */
  private readonly inflight = new Map<string, Promise<Resolution>>();
  /** Last successful answer per path, kept through transient failures (not through definite ones). */
  private readonly lastGood: Lru<string, LogicalClusterName>;
  private readonly base: Pick<RestClient, "get">;
  private readonly ttlMs: number;
  private readonly retryMs: number;
  private readonly maxSegments: number;
  private readonly clock: Clock;

  constructor(opts: WorkspaceResolverOptions) {
    this.base = opts.base;
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.retryMs = opts.retryMs ?? 5_000;
    this.maxSegments = opts.maxSegments ?? MAX_PROVIDER_PATH_SEGMENTS;
    this.clock = opts.clock ?? realClock;
    this.entries = new Lru(opts.maxEntries ?? DEFAULT_MAX_CACHED_PATHS);
    this.lastGood = new Lru(opts.maxEntries ?? DEFAULT_MAX_CACHED_PATHS);
  }

  /** How many paths have a cached answer, and how many a last good cluster (each at most `maxEntries`). */
  cached(): { answers: number; lastGood: number } {
    return { answers: this.entries.size, lastGood: this.lastGood.size };
  }

  async resolve(path: WorkspacePath): Promise<Resolution> {
    const segments = path.split(":");
    if (segments.length === 1)
      return segments[0] === "root"
        ? { ok: true, cluster: ROOT }
        : { ok: false, reason: `workspace path ${path} does not start at root` };
    if (segments.length > this.maxSegments)
      return {
        ok: false,
        reason: `workspace path ${path} has ${segments.length} segments, more than the ${this.maxSegments} allowed`,
      };
    const hit = this.entries.get(path);
    if (hit && this.clock.now() < hit.until) return this.present(path, hit.answer);
    const gone = this.missingAncestor(segments);
    if (gone) return { ok: false, reason: `workspace ${path} not found (${causeOf(gone)})` };
    let running = this.inflight.get(path);
    if (!running) {
      running = this.read(path, segments)
        .then((answer) => this.remember(path, answer))
        .finally(() => this.inflight.delete(path));
      this.inflight.set(path, running);
    }
    return running;
  }

  /** The reason of a still-cached definite "not found" of a prefix of the path: nothing below it can exist. */
  private missingAncestor(segments: string[]): string | undefined {
    const now = this.clock.now();
    for (let n = 2; n < segments.length; n++) {
      const e = this.entries.get(segments.slice(0, n).join(":"));
      if (e && now < e.until && !e.answer.ok && !e.answer.transient) return e.answer.reason;
    }
    return undefined;
  }

  /** Caches a fresh answer: good and definite ones for the TTL, transient ones with backoff. */
  private remember(path: string, answer: Resolution): Resolution {
    const now = this.clock.now();
    if (answer.ok) {
      this.lastGood.set(path, answer.cluster);
      this.entries.set(path, { answer, until: now + this.ttlMs, failures: 0 });
    } else if (!answer.transient && !SETTLING.has(answer)) {
      this.lastGood.delete(path);
      this.entries.set(path, { answer, until: now + this.ttlMs, failures: 0 });
    } else {
      if (!answer.transient) this.lastGood.delete(path);
      const failures = (this.entries.get(path)?.failures ?? 0) + 1;
      const wait = Math.min(this.retryMs * 2 ** (failures - 1), this.ttlMs);
      this.entries.set(path, { answer, until: now + wait, failures });
    }
    return this.present(path, answer);
  }

  /** A transient failure answers with the last good cluster when there is one. */
  private present(path: string, answer: Resolution): Resolution {
    if (answer.ok || !answer.transient) return answer;
    const last = this.lastGood.get(path);
    return last ? { ok: true, cluster: last, stale: answer.reason } : answer;
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
      if (isApiError(err, 403)) return this.forbidden(path, parent);
      return { ok: false, transient: true, reason: `reading workspace ${path}: ${(err as Error).message}` };
    }
    if (ws.metadata.deletionTimestamp) return { ok: false, reason: `workspace ${path} is being deleted` };
    const cluster = ws.spec?.cluster;
    if (!cluster) {
      const phase = ws.status?.phase ?? "unknown";
      const settling: Resolution = {
        ok: false,
        reason: `workspace ${path} has no logical cluster yet (phase ${phase})`,
      };
      SETTLING.add(settling);
      return settling;
    }
    const logical = parseLogicalClusterName(cluster);
    if (!logical) return { ok: false, reason: `workspace ${path} names ${JSON.stringify(cluster)} as its cluster` };
    return { ok: true, cluster: logical };
  }

  /**
   * kcp answers 403 for anything inside a workspace that does not exist: a missing parent is a definite answer. The
   * parent is resolved like any path, so the walk up stops at the first level with a cached answer.
   */
  private async forbidden(path: string, parent: WorkspacePath): Promise<Resolution> {
    const up = parent === "root" ? undefined : await this.resolve(parent);
    if (up && !up.ok && !up.transient)
      return { ok: false, reason: `workspace ${path} not found (${causeOf(up.reason)})` };
    return {
      ok: false,
      transient: true,
      reason: `not allowed to read workspace ${path}: grant get on tenancy.kcp.io workspaces and the access verb in ${parent}`,
    };
  }

  /** Forgets a path and everything below it, e.g. after a write to its logical cluster failed. */
  invalidate(path: string): void {
    for (const [key] of this.entries.entries())
      if (key === path || key.startsWith(`${path}:`)) this.entries.delete(key);
  }

  /** Forgets every path that resolved to this logical cluster. */
  invalidateCluster(cluster: string): void {
    for (const [key, e] of this.entries.entries())
      if (e.answer.ok && e.answer.cluster === cluster) this.invalidate(key);
  }
}
