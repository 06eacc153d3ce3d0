// A clock for tests: time moves only when the test says so, and every timer due by then fires in order, with the
// promise jobs it starts run to completion in between. No test sleeps to make something happen.
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Clock, Timer } from "../../src/util/clock.ts";

export class FakeClock implements Clock {
  private time = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): Timer {
    const id = this.seq++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), fn });
    return { cancel: () => this.timers.delete(id) };
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
