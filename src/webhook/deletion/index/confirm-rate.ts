// How many second looks (confirm.ts) one consumer workspace may cause: a token bucket per workspace, on a Clock so
// tests can move time by hand. Past it the denial stands as the index gave it (the safe side), so a tenant that
// retries a refused delete in a loop spends its own budget, not the event loop every other tenant needs.
import type { Clock } from "../../../util/clock.ts";

export interface ConfirmRateOptions {
  clock: Clock;
  /** Reads refilled per second, per consumer workspace. */
  perSecond: number;
  /** Reads a workspace may make at once (the bucket's size). */
  burst: number;
}

/** Past this many workspaces tracked, full buckets are dropped (a full bucket is the same as none). */
const MAX_TRACKED = 10_000;

export class ConfirmRate {
  private readonly opts: ConfirmRateOptions;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(opts: ConfirmRateOptions) {
    this.opts = opts;
  }

  /** Takes `n` reads from `consumer`'s bucket if it holds them all; false (and takes nothing) otherwise. */
  take(consumer: string, n: number): boolean {
    const now = this.opts.clock.now();
    const tokens = this.level(consumer, now);
    if (tokens < n) {
      this.buckets.set(consumer, { tokens, at: now });
      return false;
    }
    this.buckets.set(consumer, { tokens: tokens - n, at: now });
    if (this.buckets.size > MAX_TRACKED) this.prune(now);
    return true;
  }

  private level(consumer: string, now: number): number {
    const b = this.buckets.get(consumer);
    if (!b) return this.opts.burst;
    return Math.min(this.opts.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.opts.perSecond);
  }

  private prune(now: number): void {
    for (const key of [...this.buckets.keys()]) if (this.level(key, now) >= this.opts.burst) this.buckets.delete(key);
  }
}
