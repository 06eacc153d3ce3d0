// The live source of the rule registry: DependencyRules watched through the dep-ctrl APIExport's virtual workspace
// on every endpoint (shard), their provider paths resolved, and the registry brought up to date on the work loop after
// every change (the whole list is handed over; registry-state.ts derives again only what changed). Not ready until every endpoint has listed
// its rules and a registry was built from that complete list, so no DELETE is decided on a partial set of rules.
//
// After that first full sync, neither an endpoint whose list/watch fails (for longer than `brokenAfterMs`) nor a new
// endpoint that has not listed yet makes the replica unready: the last-known rules stay, and only the reviews whose
// rules may come from that shard are refused with 503 (visibility.ts says which). Transitions are logged and the
// per-endpoint gauge is kept on a timer.
import type { Logger } from "pino";
import type { DependencyRule, WorkspacePath } from "../../api/types.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import { resolveWithStored } from "../../kcp/stored-resolution.ts";
import { NO_VERDICTS, type Verdicts } from "../../api/verdicts.ts";
import { realClock, type Clock, type Timer } from "../../util/clock.ts";
import { WorkLoop, type PassResult } from "../../util/workloop.ts";
import type { RuleEndpointMetrics, WebhookMetrics } from "../metrics.ts";
import { formatProblem, RegistryState, type RuleRegistry } from "./registry.ts";
import { reportEndpoints } from "./endpoint-metrics.ts";
import { listWithOrigins, withVisibility, type Visibility } from "./visibility.ts";

/** The part of the rule watch the source needs; ExportWatch in production, a fake in tests. */
export interface RuleWatch {
  start(): void;
  stop(): void;
  hasSynced(): boolean;
  list(): DependencyRule[];
  /** Each rule with the endpoint it was listed from (ExportWatch); without it, no rule has a known origin. */
  listWithEndpoints?(): { endpoint: string; object: DependencyRule }[];
  /** The endpoints being listed and watched, for the per-endpoint gauge. */
  endpoints?(): string[];
  /** What is failing now (ExportWatch.failing); without it, every endpoint counts as healthy. */
  failing?(): { endpoint: string; error: string }[];
  /** Whether each endpoint has listed (ExportWatch.endpointStates): one that has not counts as unseen. */
  endpointStates?(): { endpoint: string; synced: boolean }[];
}

/** Stands for the endpoint list itself while it changes and no endpoint is known to be listing yet. */
const ENDPOINT_LIST = "(the endpoint list, changing)";

export interface RuleSourceOptions {
  /** Builds the watch; `onChange` must be called after every change. */
  watch: (onChange: () => void) => RuleWatch;
  resolver: { resolve(path: WorkspacePath): Promise<Resolution> };
  logger: Logger;
  /** The per-endpoint gauge is used once createWebhookMetrics provides it (rule-endpoint-metrics.ts). */
  metrics?: WebhookMetrics & Partial<RuleEndpointMetrics>;
  /** Told every registry built, complete or not (the dependents index follows its dependent types). */
  onRegistry?: (registry: RuleRegistry) => void;
  /** Rebuild delay after a provider path failed to resolve. */
  retryMs?: number;
  /** Periodic rebuild, so a workspace recreated under the same path (new logical cluster) is picked up. */
  refreshMs?: number;
  /** How often to look again while the watch has not synced (it does not announce a sync without endpoints). */
  syncPollMs?: number;
  /** How long an endpoint's list/watch must have been failing before its rules count as unseen (default 5 s). */
  brokenAfterMs?: number;
  /** How often endpoint health is looked at for the log and the gauge (decisions look at every review). */
  healthPollMs?: number;
  clock?: Clock;
  /** Enforce rules whose author declined the read-only checks (--enforce-unverified-rules; the operator's choice). */
  enforceUnverified?: boolean;
  /** At most this many rules per workspace are enforced (--max-rules-per-workspace); unset: no cap. */
  maxRulesPerWorkspace?: number;
  /**
   * The controller's verdicts on the rules and the stored path resolutions (src/api/verdicts.ts; VerdictStore in
   * production, whose changes must call refresh(); started and stopped with the source). Without it every rule is
   * unjudged and nothing is stored.
   */
  verdicts?: { current(): Verdicts; hasSynced(): boolean; start?(): void; stop?(): void };
}

export class RuleSource {
  private readonly opts: RuleSourceOptions;
  private readonly watch: RuleWatch;
  private readonly loop: WorkLoop;
  private registry: RuleRegistry | undefined;
  /** The registry, kept up to date; also asked by the rule admission webhook how many rules an author has. */
  readonly state: RegistryState;
  /** Bumped whenever the watch is seen unsynced; a build counts as complete only if none happened during it. */
  private unsyncedEpoch = 0;
  private complete = false;
  /** A complete registry was built once: from then on, an unlisted endpoint refuses only its own reviews. */
  private everComplete = false;
  /** Rule key → endpoints it was listed from, for the registry being handed out; undefined: origins unknown. */
  private ruleEndpoints: ReadonlyMap<string, readonly string[]> | undefined;
  /** Endpoint → when (clock time) it was first seen failing, in its current run of failures. */
  private failingSince = new Map<string, number>();
  /** Endpoints last reported broken, so transitions are logged once. */
  private reportedBroken = new Set<string>();
  private healthTimer: Timer | undefined;

  constructor(opts: RuleSourceOptions) {
    this.opts = opts;
    const { enforceUnverified, maxRulesPerWorkspace } = opts;
    this.state = new RegistryState({ enforceUnverified: enforceUnverified === true, maxRulesPerWorkspace });
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
    this.opts.verdicts?.start?.();
    this.watch.start();
    this.loop.start();
    this.scheduleHealth();
  }

  stop(): void {
    this.healthTimer?.cancel();
    this.healthTimer = undefined;
    this.watch.stop();
    this.opts.verdicts?.stop?.();
    void this.loop.stop();
  }

  /**
   * The registry to decide with, or undefined while not every rule is known. While an endpoint is broken, its
   * `find` marks the matches whose rules may come from there (see rule-visibility.ts).
   */
  current(): RuleRegistry | undefined {
    if (!this.registry) return undefined;
    if (!this.everComplete && (!this.complete || !this.watch.hasSynced())) return undefined;
    return withVisibility(this.registry, this.visibility());
  }

  /** The endpoints whose rules cannot be seen now, and where each known rule came from. */
  visibility(): Visibility {
    const now = (this.opts.clock ?? realClock).now();
    const after = this.opts.brokenAfterMs ?? 5_000;
    const since = new Map<string, number>();
    const broken = new Map<string, string>();
    for (const { endpoint, error } of this.watch.failing?.() ?? []) {
      const first = this.failingSince.get(endpoint) ?? now;
      since.set(endpoint, first);
      if (now - first >= after) broken.set(endpoint, error);
    }
    this.failingSince = since;
    if (this.everComplete) this.addUnlisted(broken);
    return { broken, ruleEndpoints: this.ruleEndpoints };
  }

  /** New endpoints that have not listed yet count as broken at once: their rules are unknown. */
  private addUnlisted(broken: Map<string, string>): void {
    const unlisted = (this.watch.endpointStates?.() ?? []).filter((e) => !e.synced).map((e) => e.endpoint);
    for (const e of unlisted) if (!broken.has(e)) broken.set(e, "has not listed its DependencyRules yet");
    if (unlisted.length === 0 && !this.watch.hasSynced()) broken.set(ENDPOINT_LIST, "not every endpoint has listed");
  }

  /** Something the registry is built from besides the rules changed (the verdicts): rebuild. */
  refresh(): void {
    this.loop.enqueue();
  }

  /** For /readyz: undefined when ready, else why not. */
  notReadyReason(): string | undefined {
    if (this.everComplete) return undefined;
    if (!this.watch.hasSynced()) return "rule registry not yet synced: still listing DependencyRules on every endpoint";
    if (this.opts.verdicts && !this.opts.verdicts.hasSynced())
      return "rule registry not yet synced: still listing the rule verdicts in the dep-ctrl workspace";
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

  /** Looks at endpoint health every healthPollMs: logs each endpoint turning broken or healthy, sets the gauge. */
  private scheduleHealth(): void {
    this.healthTimer = (this.opts.clock ?? realClock).after(this.opts.healthPollMs ?? 1_000, () => {
      this.checkHealth();
      this.scheduleHealth();
    });
  }

  private checkHealth(): void {
    const { broken } = this.visibility();
    for (const [endpoint, error] of broken)
      if (!this.reportedBroken.has(endpoint))
        this.opts.logger.warn(
          { endpoint, error },
          "cannot list or watch DependencyRules on this endpoint: the reviews whose rules may come from it are " +
            "refused (503) until it is back; the others are decided with the rules last seen",
        );
    for (const endpoint of this.reportedBroken)
      if (!broken.has(endpoint)) this.opts.logger.info({ endpoint }, "DependencyRules on this endpoint in sync again");
    this.reportedBroken = new Set(broken.keys());
    reportEndpoints(this.opts.metrics?.ruleEndpointUnsynced, this.watch.endpoints?.() ?? [], this.reportedBroken);
  }

  private async rebuild(): Promise<PassResult> {
    // Without the verdicts a rule the controller found protecting would read as unjudged: not complete until listed.
    const synced = this.watch.hasSynced() && (this.opts.verdicts?.hasSynced() ?? true);
    const epoch = this.unsyncedEpoch;
    const { rules, origins } = listWithOrigins(this.watch);
    const verdicts = this.opts.verdicts?.current() ?? NO_VERDICTS;
    const paths = this.state.observe(rules);
    // A restarted replica has no last good answer of its own: the stored one keeps its protection in place.
    const resolutions = await resolveWithStored(paths, this.opts.resolver, verdicts.paths);
    const changed = this.state.settle(resolutions, verdicts);
    const registry = this.state.current();
    // The first registry is announced, later ones only when they changed.
    if (changed || !this.registry) this.opts.onRegistry?.(registry);
    this.registry = registry;
    this.ruleEndpoints = origins;
    this.complete = synced && epoch === this.unsyncedEpoch;
    if (this.complete) this.everComplete = true;
    if (changed) this.report(registry);
    // Once complete, a new endpoint's rules come with their own events; a slower look again bounds the cost.
    if (!this.complete)
      return { requeueAfterMs: this.everComplete ? (this.opts.retryMs ?? 5_000) : (this.opts.syncPollMs ?? 250) };
    const unresolved = [...resolutions.values()].some((r) => !r.ok || r.stale);
    return unresolved ? { requeueAfterMs: this.opts.retryMs ?? 5_000 } : {};
  }

  private report(registry: RuleRegistry): void {
    const m = this.opts.metrics;
    const counts = this.state.counts();
    m?.registryRules.set(registry.ruleCount);
    m?.registryEntries.set(registry.entryCount);
    m?.registryProblems.set(counts.problems);
    m?.rulesNotEnforced.set(counts.notEnforced);
    // Each problem is logged once, when it appears.
    for (const p of this.state.takeFresh()) this.opts.logger.warn({ problem: formatProblem(p) }, "rule not registered");
  }
}
