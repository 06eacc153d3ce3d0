// Retrying what kcp answers with 429 Too Many Requests (priority and fairness, max-in-flight, a shard that does not
// serve a freshly bound resource yet): wait as long as Retry-After says, capped, and never past the caller's signal.
// kcp refuses a 429 before doing anything, so every method may be sent again.
import { realClock, type Clock } from "../util/clock.ts";

/** The limits, and the Clock's `sleep` and `now` (for an HTTP-date Retry-After and the total budget). */
export interface RetryPolicy extends Pick<Clock, "now" | "sleep"> {
  /** Attempts after the first (default 5); 0 turns retrying off. */
  maxRetries: number;
  /** Longest single wait, whatever Retry-After asks for (default 5 s). */
  maxDelayMs: number;
  /** The wait when the answer has no usable Retry-After (default 1 s). */
  defaultDelayMs: number;
  /** No retry starts later than this after the first attempt (default 10 s); the caller's signal may cut it shorter. */
  maxTotalMs: number;
}

/** A clock's `now` and `sleep` as a policy's, bound to it (a class's methods lose `this` when taken off). */
export function retryClock(clock: Clock): Pick<RetryPolicy, "now" | "sleep"> {
  return { now: () => clock.now(), sleep: (ms, signal) => clock.sleep(ms, signal) };
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  maxDelayMs: 5_000,
  defaultDelayMs: 1_000,
  maxTotalMs: 10_000,
  ...retryClock(realClock),
};

/** Milliseconds a Retry-After header asks for (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = /[a-z]/i.test(value) ? Date.parse(value) : NaN; // Date.parse alone takes "-1" for a year
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** One answer, read whole: enough to tell a 429 and its Retry-After. */
export interface Answer {
  status: number;
  retryAfter?: string | string[] | undefined;
}

/**
 * Calls `attempt` until it answers anything but 429, and returns that answer. Between attempts it waits as Retry-After
 * says (at most maxDelayMs; defaultDelayMs without one). It returns the last 429 when the retries are used up, when
 * the wait would end past maxTotalMs from the first attempt, or when `signal` aborts, before or during the wait.
 */
export async function retrying429<A extends Answer>(
  attempt: () => Promise<A>,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<A> {
  const start = policy.now();
  for (let retries = 0; ; retries++) {
    const answer = await attempt();
    if (answer.status !== 429 || retries >= policy.maxRetries || signal?.aborted) return answer;
    const now = policy.now();
    const asked = retryAfterMs(answer.retryAfter, now) ?? policy.defaultDelayMs;
    const wait = Math.min(asked, policy.maxDelayMs);
    if (now + wait - start > policy.maxTotalMs) return answer;
    try {
      await policy.sleep(wait, signal);
    } catch {
      return answer; // aborted while waiting: the 429 says more than an AbortError
    }
    if (signal?.aborted) return answer;
  }
}
