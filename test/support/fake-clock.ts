// A clock for tests: time moves only when the test says so, and every timer due by then fires in order, with the
// promise jobs it starts run to completion in between. No test sleeps to make something happen.
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Clock, Timer } from "../../src/util/clock.ts";

export class FakeClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  /** `start`: the time `now()` answers until the first advance (default 0). */
  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): Timer {
    const id = this.seq++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), fn });
    return { cancel: () => this.timers.delete(id) };
  }

  /** Resolves when time has been advanced past `ms`; rejects as the real one does when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const aborted = (): Error => new DOMException("The operation was aborted", "AbortError");
      if (signal?.aborted) return reject(aborted());
      const onAbort = (): void => {
        timer.cancel();
        reject(aborted());
      };
      const timer = this.after(ms, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Lets the promise jobs started so far run (a few turns of the event loop). */
  async settle(): Promise<void> {
    for (let i = 0; i < 5; i++) await nextTurn();
  }

  /** Moves time forward by `ms`, firing each due timer at its own time. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await this.settle();
    for (;;) {
      const next = [...this.timers.entries()]
        .filter(([, t]) => t.at <= end)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
      await this.settle();
    }
    this.time = end;
  }

  /** Timers waiting, for assertions about what is scheduled. */
  pending(): number {
    return this.timers.size;
  }
}
