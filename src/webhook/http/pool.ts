// A fixed number of review slots with a short, bounded queue in front. A request takes a slot only once its body is
// in memory, so a caller that uploads slowly holds a connection and a few bytes, never a slot; a queued request
// waits at most `maxWaitMs`, well inside the API server's webhook timeout, then gets 429.
import type { Clock, Timer } from "../../util/clock.ts";

/** Why a request got no slot: the queue was full, or it waited its whole allowance. */
export type NoSlot = "queue-full" | "timed-out";

export interface PoolLimits {
  slots: number;
  maxQueued: number;
  maxWaitMs: number;
}

export class ReviewPool {
  readonly slots: number;
  private busy = 0;
  private readonly waiting = new Set<{ grant: () => void }>();
  private readonly limits: PoolLimits;
  private readonly clock: Clock;

  constructor(limits: PoolLimits, clock: Clock) {
    this.limits = limits;
    this.clock = clock;
    this.slots = limits.slots;
  }

  /**
   * Takes a slot now (true, at once: no promise to wait on when one is free), or queues for one; `onQueued` is called
   * when it has to wait. Give a slot back with release.
   */
  acquire(onQueued?: () => void): true | Promise<true | NoSlot> {
    if (this.busy < this.limits.slots) {
      this.busy++;
      return true;
    }
    if (this.waiting.size >= this.limits.maxQueued) return Promise.resolve("queue-full");
    onQueued?.();
    return new Promise((resolve) => {
      let timer: Timer | undefined = undefined;
      const entry = {
        grant: () => {
          timer?.cancel();
          resolve(true);
        },
      };
      timer = this.clock.after(this.limits.maxWaitMs, () => {
        this.waiting.delete(entry);
        resolve("timed-out");
      });
      this.waiting.add(entry);
    });
  }

  /** Hands the slot to the longest-waiting request, or frees it. */
  release(): void {
    const next = this.waiting.values().next();
    if (next.done) {
      this.busy--;
      return;
    }
    this.waiting.delete(next.value);
    next.value.grant();
  }
}
