// Time as a dependency: everything that reads the time, waits or sets a timer takes a Clock, so its tests advance a
// fake one instead of sleeping.
import { setTimeout as delay } from "node:timers/promises";

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Wall clock in milliseconds. */
  now(): number;
  /** Resolves after `ms`; rejects with an AbortError when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms`; the timer never keeps the process alive. */
  after(ms: number, fn: () => void): Timer;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal ? { signal } : {}),
  after: (ms, fn) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};
