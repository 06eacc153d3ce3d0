// One work key, processed by one pass at a time: the loop both binaries run (the controller's reconcile, the
// webhook's registry rebuild). Every event enqueues the same key, so a burst becomes one pass that rebuilds
// everything (level-triggered), and a change during a pass causes exactly one more. Errors retry with capped
// exponential backoff; a periodic resync catches what no event announces (a rotated CA file, a recreated workspace).
import type { Logger } from "pino";
import { realClock, type Clock, type Timer } from "./clock.ts";

export interface PassResult {
  /** Run again after this many milliseconds even without an event (e.g. caches not synced yet). */
  requeueAfterMs?: number;
}

export interface WorkLoopOptions {
  pass: () => Promise<PassResult | void>;
  logger: Logger;
  resyncMs: number;
  /** Coalescing window after an enqueue, so the events of one list arrive as one pass. */
  debounceMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  clock?: Clock;
}

export class WorkLoop {
  private readonly opts: Required<WorkLoopOptions>;
  private timer: Timer | undefined;
  private resync: Timer | undefined;
  private dueAt = Infinity;
  private running: Promise<void> | undefined;
  /** Set synchronously before a pass starts, so an enqueue from inside the pass marks it dirty. */
  private busy = false;
  private dirty = false;
  private failures = 0;
  private stopped = true;

  constructor(opts: WorkLoopOptions) {
    this.opts = { debounceMs: 100, backoffBaseMs: 500, backoffMaxMs: 60_000, clock: realClock, ...opts };
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.failures = 0;
    this.scheduleResync();
    this.enqueue();
  }

  /** Asks for a pass soon; cheap to call for every event. */
  enqueue(): void {
    this.schedule(this.opts.debounceMs);
  }

  /** Stops scheduling and waits for a running pass to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.resync?.cancel();
    this.timer?.cancel();
    this.timer = undefined;
    this.dueAt = Infinity;
    await this.running;
  }

  /** Consecutive failed passes (0 after a success). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Resolves when no pass is running (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private scheduleResync(): void {
    this.resync = this.opts.clock.after(this.opts.resyncMs, () => {
      if (this.stopped) return;
      this.enqueue();
      this.scheduleResync();
    });
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.busy) {
      this.dirty = true;
      return;
    }
    const at = this.opts.clock.now() + delayMs;
    if (this.timer && this.dueAt <= at) return;
    this.timer?.cancel();
    this.dueAt = at;
    this.timer = this.opts.clock.after(delayMs, () => this.fire());
  }

  private fire(): void {
    this.timer = undefined;
    this.dueAt = Infinity;
    if (this.stopped) return;
    this.dirty = false;
    this.busy = true;
    this.running = this.runPass();
  }

  private async runPass(): Promise<void> {
    let next: number | undefined;
    try {
      const result = await this.opts.pass();
      this.failures = 0;
      next = result?.requeueAfterMs;
    } catch (err) {
      this.failures++;
      next = Math.min(this.opts.backoffMaxMs, this.opts.backoffBaseMs * 2 ** Math.min(this.failures - 1, 20));
      this.opts.logger.warn({ err: String(err), retryInMs: next, failures: this.failures }, "pass failed");
    } finally {
      this.busy = false;
      this.running = undefined;
    }
    // As in controller-runtime, an event runs a pass soon even during a backoff (a fix should apply at once); the
    // backoff only spaces out retries nothing asked for. Our writes are idempotent, so events from them die out.
    if (this.dirty) this.schedule(this.opts.debounceMs);
    else if (next !== undefined) this.schedule(next);
  }
}
