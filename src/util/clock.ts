// Time as a dependency: loops and timers take a Clock, so their tests advance a fake one instead of sleeping.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): number;
  /** Calls `fn` once after `ms`; the timer never keeps the process alive. */
  after(ms: number, fn: () => void): Timer;
}

export const realClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};
