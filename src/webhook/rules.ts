// The live source of the rule registry: DependencyRules watched through the dep-ctrl APIExport's virtual workspace
// on every endpoint (shard), their provider paths resolved to logical clusters, and the registry rebuilt from
// scratch after every change (level-triggered). Not ready until every endpoint has listed its rules and a registry
// was built from that complete list; while a newly added endpoint is still listing, it is not ready again, so no
// DELETE is decided on a partial set of rules.
import type { Logger } from "pino";
import { GROUP, PLURAL, VERSION, type DependencyRule } from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import type { WebhookMetrics } from "./metrics.ts";
import { buildRegistry, formatProblem, rulePaths, type RuleRegistry } from "./registry.ts";

export const RULES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

/** The part of the rule watch the source needs; ExportWatch in production, a fake in tests. */
export interface RuleWatch {
  start(): void;
  stop(): void;
  hasSynced(): boolean;
  list(): DependencyRule[];
}

export interface RuleSourceOptions {
  /** Builds the watch; `onChange` must be called after every change. */
  watch: (onChange: () => void) => RuleWatch;
  resolver: { resolve(path: string): Promise<Resolution> };
  logger: Logger;
  metrics?: WebhookMetrics;
  /** Rebuild delay after a provider path failed to resolve. */
  retryMs?: number;
  /** Periodic rebuild, so a workspace recreated under the same path (new logical cluster) is picked up. */
  refreshMs?: number;
}

export class RuleSource {
  private readonly opts: RuleSourceOptions;
  private readonly watch: RuleWatch;
  private registry: RuleRegistry | undefined;
  /** Bumped whenever the watch is seen unsynced; a build counts as complete only if none happened during it. */
  private unsyncedEpoch = 0;
  private complete = false;
  private running = false;
  private dirty = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private syncPoll: NodeJS.Timeout | undefined;
  private loggedProblems = new Set<string>();
  private idle: Promise<void> = Promise.resolve();

  constructor(opts: RuleSourceOptions) {
    this.opts = opts;
    this.watch = opts.watch(() => this.onChange());
  }

  start(): void {
    this.watch.start();
    this.refreshTimer = setInterval(() => this.onChange(), this.opts.refreshMs ?? 60_000);
    this.refreshTimer.unref();
    // The watch does not report its first sync when there are no endpoints yet; poll until the first build.
    this.syncPoll = setInterval(() => {
      if (this.complete) clearInterval(this.syncPoll);
      else if (this.watch.hasSynced() && !this.running) this.onChange();
    }, 250);
    this.syncPoll.unref();
  }

  stop(): void {
    this.stopped = true;
    this.watch.stop();
    clearInterval(this.refreshTimer);
    clearInterval(this.syncPoll);
    clearTimeout(this.retryTimer);
  }

  /** The registry to decide with, or undefined while not every rule is known. */
  current(): RuleRegistry | undefined {
    return this.complete && this.watch.hasSynced() ? this.registry : undefined;
  }

  /** For /readyz: undefined when ready, else why not. */
  notReadyReason(): string | undefined {
    if (!this.watch.hasSynced()) return "rule registry not yet synced: still listing DependencyRules on every endpoint";
    if (!this.complete) return "rule registry not yet built";
    return undefined;
  }

  /** Resolves once no rebuild is running or queued (for tests). */
  settled(): Promise<void> {
    return this.idle;
  }

  private onChange(): void {
    if (this.stopped) return;
    if (!this.watch.hasSynced()) this.unsyncedEpoch++;
    if (this.running) {
      this.dirty = true;
      return;
    }
    this.running = true;
    this.idle = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.dirty = false;
        await this.rebuild();
      } while (this.dirty && !this.stopped);
    } finally {
      this.running = false;
    }
  }

  private async rebuild(): Promise<void> {
    const synced = this.watch.hasSynced();
    const epoch = this.unsyncedEpoch;
    const rules = this.watch.list();
    const resolutions = new Map<string, Resolution>();
    await Promise.all(
      rulePaths(rules).map(async (path) => {
        try {
          resolutions.set(path, await this.opts.resolver.resolve(path));
        } catch (err) {
          resolutions.set(path, { ok: false, transient: true, reason: (err as Error).message });
        }
      }),
    );
    const registry = buildRegistry(rules, resolutions);
    this.registry = registry;
    this.complete = synced && epoch === this.unsyncedEpoch;
    this.report(registry, [...resolutions].filter(([, r]) => !r.ok || r.stale).length);
  }

  private report(registry: RuleRegistry, unresolvedPaths: number): void {
    const m = this.opts.metrics;
    m?.registryRules.set(registry.ruleCount);
    m?.registryEntries.set(registry.entryCount);
    m?.registryProblems.set(registry.problems.length);
    // Log each problem once, not on every rebuild.
    const now = new Set(registry.problems.map(formatProblem));
    for (const p of now) if (!this.loggedProblems.has(p)) this.opts.logger.warn({ problem: p }, "rule not registered");
    this.loggedProblems = now;
    if (unresolvedPaths > 0) {
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.onChange(), this.opts.retryMs ?? 5_000);
      this.retryTimer.unref();
    }
  }
}
