// Leader election through a coordination.k8s.io/v1 Lease in the dep-ctrl workspace, with client-go's algorithm:
// a lease is free when its holder has not renewed it for leaseDuration as observed on OUR clock (no clock-skew
// trust), writes use resourceVersion so two candidates cannot both win, and a leader that cannot renew within
// renewDeadline (< leaseDuration) stops acting before anyone else may take over.
import { randomBytes } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import { realClock, type Clock } from "../util/clock.ts";

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Storage of the one lease; `update` must fail with a 409 ApiError when the resourceVersion is stale. */
export interface LeaseStore {
  get(): Promise<Lease | undefined>;
  create(lease: Lease): Promise<Lease>;
  update(lease: Lease): Promise<Lease>;
}

export function restLeaseStore(workspace: RestClient, namespace: string, name: string): LeaseStore {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  return {
    get: () => workspace.getOptional<Lease>(`${collection}/${name}`),
    create: (lease) => workspace.request<Lease>("POST", collection, { body: lease }),
    update: (lease) => workspace.request<Lease>("PUT", `${collection}/${name}`, { body: lease }),
  };
}

export interface LeaderElectorOptions {
  store: LeaseStore;
  name: string;
  namespace: string;
  identity: string;
  logger: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Times the lease by our own clock and waits between attempts (default the real clock). */
  clock?: Clock;
}

/** The API server's MicroTime wants exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export class LeaderElector {
  private readonly options: Required<LeaderElectorOptions>;
  private leading = false;
  private lastRenew = -Infinity;
  private observed: { key: string; at: number } | undefined;
  private lease: Lease | undefined;

  constructor(opts: LeaderElectorOptions) {
    this.options = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      clock: realClock,
      ...opts,
    };
  }

  /** True only while the lease is ours and was renewed within renewDeadline: checked before every write. */
  isLeader(): boolean {
    return this.leading && this.options.clock.now() - this.lastRenew < this.options.renewDeadlineMs;
  }

  /** Campaigns, leads and campaigns again after losing the lease, until `signal` aborts; then releases the lease. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const ok = await this.tryAcquireOrRenew();
      if (ok && !this.leading) {
        this.leading = true;
        this.options.logger.info({ lease: this.leaseName(), identity: this.options.identity }, "became leader");
        this.options.onStartedLeading();
      } else if (!ok && this.leading && !this.isLeader()) {
        this.stopLeading("could not renew the lease within the renew deadline");
      }
      // Aborting ends the wait early; the loop condition then says stop.
      await this.options.clock.sleep(this.options.retryPeriodMs, signal).catch(() => undefined);
    }
    if (this.leading) {
      this.stopLeading("shutting down");
      await this.release();
    }
  }

  private leaseName(): string {
    return `${this.options.namespace}/${this.options.name}`;
  }

  private stopLeading(why: string): void {
    this.leading = false;
    this.options.logger.warn({ lease: this.leaseName(), reason: why }, "stopped leading");
    this.options.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.options.clock.now();
    const spec = {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: Math.ceil(this.options.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      const current = await this.options.store.get();
      if (!current) {
        this.lease = await this.options.store.create({
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: this.options.name, namespace: this.options.namespace },
          spec,
        });
        this.lastRenew = now;
        return true;
      }
      const cur = current.spec ?? {};
      const holder = cur.holderIdentity ?? "";
      // Note when the record last changed, by our clock; the holder's timestamps are never compared to our clock.
      const key = `${holder}|${cur.renewTime ?? ""}`;
      if (this.observed?.key !== key) this.observed = { key, at: now };
      const durationMs = (cur.leaseDurationSeconds ?? 0) * 1000;
      const mine = holder === this.options.identity;
      if (!mine && holder !== "" && now < this.observed.at + durationMs) return false;
      this.lease = await this.options.store.update({
        ...current,
        spec: {
          ...spec,
          acquireTime: mine && cur.acquireTime ? cur.acquireTime : spec.acquireTime,
          leaseTransitions: (cur.leaseTransitions ?? 0) + (mine ? 0 : 1),
        },
      });
      this.lastRenew = now;
      return true;
    } catch (err) {
      if (!isApiError(err, 409))
        this.options.logger.warn({ err: String(err), lease: this.leaseName() }, "lease request failed");
      return false;
    }
  }

  /** Gives the lease up so a standby replica takes over at once instead of after leaseDuration. */
  private async release(): Promise<void> {
    if (!this.lease) return;
    const now = microTime(this.options.clock.now());
    try {
      await this.options.store.update({
        ...this.lease,
        spec: { ...this.lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      });
      this.options.logger.info({ lease: this.leaseName() }, "released the lease");
    } catch (err) {
      this.options.logger.warn({ err: String(err), lease: this.leaseName() }, "could not release the lease");
    }
  }
}

/** What leading starts on this replica and losing the lease stops (the passes; what only the leader holds open). */
export interface Leadership {
  started(): void;
  stopped(): void;
}

/**
 * The controller's: leading runs the passes, after forgetting this process's own verdict writes (the informer shows
 * what the last leader wrote); losing the lease stops them and closes the local-target watches, so a standby watches
 * no consumer (the leader's first pass opens them again).
 */
export function controllerLeadership(parts: {
  loop: { start(): void; stop(): Promise<void> };
  verdicts: { forget(): void };
  localTargets: { release(): void };
}): Leadership {
  return {
    started: () => {
      parts.verdicts.forget();
      parts.loop.start();
    },
    stopped: () => {
      void parts.loop.stop();
      parts.localTargets.release();
    },
  };
}

/** Leader election as the controller runs it (or none: this replica leads); every replica keeps its informers warm. */
export function elect(
  config: { leaderElect: boolean; leaseName: string; leaseNamespace: string },
  workspace: RestClient,
  deps: { logger: Logger; metrics: { leader: { set(value: number): void } }; clock: Clock },
  leadership: Leadership,
  onElector: (elector: LeaderElector) => void,
): { stop(): Promise<void> } {
  if (!config.leaderElect) {
    deps.metrics.leader.set(1);
    leadership.started();
    return { stop: () => Promise.resolve() };
  }
  const abort = new AbortController();
  const elector = new LeaderElector({
    store: restLeaseStore(workspace, config.leaseNamespace, config.leaseName),
    name: config.leaseName,
    namespace: config.leaseNamespace,
    identity: `${os.hostname()}_${randomBytes(4).toString("hex")}`,
    logger: deps.logger,
    clock: deps.clock,
    onStartedLeading: () => {
      deps.metrics.leader.set(1);
      leadership.started();
    },
    onStoppedLeading: () => {
      deps.metrics.leader.set(0);
      leadership.stopped();
    },
  });
  onElector(elector);
  const running = elector.run(abort.signal);
  return {
    async stop() {
      abort.abort();
      await running;
    },
  };
}
