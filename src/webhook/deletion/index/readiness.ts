// When a starting replica's index is ready enough to take DELETEs. Like an informer cache sync in controller-runtime,
// the replica waits once, at start, for the dependent types its rules name to be listed: otherwise every rollout
// answers 503 "still syncing" for a few seconds on the new replica. The wait is bounded and a failing type does not
// hold it: a provider that withholds its consent, or a shard that is down, must not keep the replica (and with it
// every other tenant's deletes) out of service. Those types answer 503 for their own deletes only.
import type { Clock } from "../../../util/clock.ts";
import type { TypeHealth } from "./watches.ts";

/** How long a starting replica waits for types still listing before it goes Ready without them. */
export const INDEX_READY_GRACE_MS = 60_000;

export interface IndexReadinessOptions {
  health: () => TypeHealth[];
  /** True once the rule registry is complete, so the index follows every rule's dependent type. */
  registrySynced: () => boolean;
  clock: Clock;
  graceMs?: number;
  /** Told once, when the grace ran out with types still listing. */
  onGraceExpired?: (syncing: string[]) => void;
}

export class IndexReadiness {
  private readonly opts: IndexReadinessOptions;
  private waitingSince: number | undefined;
  private settled = false;

  constructor(opts: IndexReadinessOptions) {
    this.opts = opts;
  }

  /** A ReadyCheck: undefined once settled (for good), else why not yet. */
  notReadyReason(): string | undefined {
    if (this.settled) return undefined;
    if (!this.opts.registrySynced()) return "the index waits for the rule registry";
    const now = this.opts.clock.now();
    this.waitingSince ??= now;
    const syncing = this.opts
      .health()
      .filter((t) => t.state === "syncing")
      .map((t) => t.type)
      .sort();
    if (syncing.length === 0) {
      this.settled = true;
      return undefined;
    }
    if (now - this.waitingSince >= (this.opts.graceMs ?? INDEX_READY_GRACE_MS)) {
      this.settled = true;
      this.opts.onGraceExpired?.(syncing);
      return undefined;
    }
    return `the index is listing ${syncing.length} dependent type(s): ${syncing.join(", ")}`;
  }
}
