// One work key, processed by one pass at a time. Every watch event enqueues the same key, so a burst of events
// becomes one pass that rebuilds everything (level-triggered), and a change during a pass causes exactly one more.
// Errors retry with capped exponential backoff; a periodic resync catches what no event announces (a rotated CA file).
import type { Logger } from "pino";

export interface PassResult {
  /** Run again after this many milliseconds even without an event (e.g. caches not synced yet). */
  requeueAfterMs?: number;
}

export interface LoopOptions {
  pass: () => Promise<PassResult | void>;
  logger: Logger;
  resyncMs: number;
  /** Coalescing window after an enqueue, so the events of one list arrive as one pass. */
  debounceMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

export class SingleKeyLoop {
  private readonly opts: Required<LoopOptions>;
  private timer: NodeJS.Timeout | undefined;
  private resync: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private running: Promise<void> | undefined;
  /** Set synchronously before a pass starts, so an enqueue from inside the pass marks it dirty. */
  private busy = false;
  private dirty = false;
  private failures = 0;
  private stopped = true;

  constructor(opts: LoopOptions) {
    this.opts = { debounceMs: 100, backoffBaseMs: 500, backoffMaxMs: 60_000, ...opts };
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.failures = 0;
    this.resync = setInterval(() => this.enqueue(), this.opts.resyncMs);
    this.resync.unref();
    this.enqueue();
  }

  /** Asks for a pass soon; cheap to call for every event. */
  enqueue(): void {
    this.schedule(this.opts.debounceMs);
  }

  /** Stops scheduling and waits for a running pass to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resync);
    clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Infinity;
    await this.running;
  }

  /** Consecutive failed passes (0 after a success). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.busy) {
      this.dirty = true;
      return;
    }
    const at = Date.now() + delayMs;
    if (this.timer && this.dueAt <= at) return;
    clearTimeout(this.timer);
    this.dueAt = at;
    this.timer = setTimeout(() => this.fire(), delayMs);
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
      this.opts.logger.warn({ err: String(err), retryInMs: next, failures: this.failures }, "reconcile failed");
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
