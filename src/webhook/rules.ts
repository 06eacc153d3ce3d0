// The live source of the rule registry: DependencyRules watched through the dep-ctrl APIExport's virtual workspace
// on every endpoint (shard), their provider paths resolved to logical clusters, and the registry rebuilt from
// scratch on the shared work loop after every change (level-triggered). Not ready until every endpoint has listed
// its rules and a registry was built from that complete list; while a newly added endpoint is still listing, it is
// not ready again, so no DELETE is decided on a partial set of rules.
import type { Logger } from "pino";
import { GROUP, PLURAL, VERSION, type DependencyRule } from "../api/types.ts";
import type { Resolution } from "../kcp/workspaces.ts";
import type { Clock } from "../util/clock.ts";
import { WorkLoop, type PassResult } from "../util/workloop.ts";
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
  /** Told every registry built, complete or not (the dependents index follows its dependent types). */
  onRegistry?: (registry: RuleRegistry) => void;
  /** Rebuild delay after a provider path failed to resolve. */
  retryMs?: number;
  /** Periodic rebuild, so a workspace recreated under the same path (new logical cluster) is picked up. */
  refreshMs?: number;
  /** How often to look again while the watch has not synced (it does not announce a sync without endpoints). */
  syncPollMs?: number;
  clock?: Clock;
}

export class RuleSource {
  private readonly opts: RuleSourceOptions;
  private readonly watch: RuleWatch;
  private readonly loop: WorkLoop;
  private registry: RuleRegistry | undefined;
  /** Bumped whenever the watch is seen unsynced; a build counts as complete only if none happened during it. */
  private unsyncedEpoch = 0;
  private complete = false;
  private loggedProblems = new Set<string>();

  constructor(opts: RuleSourceOptions) {
    this.opts = opts;
    this.loop = new WorkLoop({
      pass: () => this.rebuild(),
      logger: opts.logger,
      resyncMs: opts.refreshMs ?? 60_000,
      debounceMs: 0,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
    this.watch = opts.watch(() => this.onChange());
  }

  start(): void {
    this.watch.start();
    this.loop.start();
  }

  stop(): void {
    this.watch.stop();
    void this.loop.stop();
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

  /** Resolves once no rebuild is running (for tests). */
  settled(): Promise<void> {
    return this.loop.idle();
  }

  private onChange(): void {
    if (!this.watch.hasSynced()) this.unsyncedEpoch++;
    this.loop.enqueue();
  }

  private async rebuild(): Promise<PassResult> {
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
    this.opts.onRegistry?.(registry);
    this.complete = synced && epoch === this.unsyncedEpoch;
    this.report(registry);
    if (!this.complete) return { requeueAfterMs: this.opts.syncPollMs ?? 250 };
    const unresolved = [...resolutions.values()].some((r) => !r.ok || r.stale);
    return unresolved ? { requeueAfterMs: this.opts.retryMs ?? 5_000 } : {};
  }

  private report(registry: RuleRegistry): void {
    const m = this.opts.metrics;
    m?.registryRules.set(registry.ruleCount);
    m?.registryEntries.set(registry.entryCount);
    m?.registryProblems.set(registry.problems.length);
    // Log each problem once, not on every rebuild.
    const now = new Set(registry.problems.map(formatProblem));
    for (const p of now) if (!this.loggedProblems.has(p)) this.opts.logger.warn({ problem: p }, "rule not registered");
    this.loggedProblems = now;
  }
}
