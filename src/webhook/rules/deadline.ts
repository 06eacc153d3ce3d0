// The rule admission check's own deadline. kcp gives the check 5 s (timeoutSeconds) and then, with failurePolicy
// Ignore, stores the rule as if it had been checked, without a word to its author. So the check stops waiting well
// before: what has not answered by then is reported as not checked, in a warning kubectl prints, and the rule is
// allowed (the controller checks it anyway, and a refusal would stop authors fixing rules whenever kcp is slow).
// The reads themselves keep running and fill the resolver's cache, so applying again answers at once.
import type { Clock } from "../../util/clock.ts";

/**
 * How long the check waits for kcp. The /validate-rules pool may queue a review up to 2 s (QUEUE_WAIT_MS) before it
 * starts; 2 + 2.5 s leaves half a second of kcp's 5 s for the answer to travel.
 */
export const RULE_CHECK_DEADLINE_MS = 2_500;

export interface Deadline {
  /** `work`'s answer, or `late()` once the deadline passes first; `work` is not stopped. */
  within<T>(work: Promise<T>, late: () => T): Promise<T>;
}

export function startDeadline(clock: Clock, ms: number): Deadline {
  let passed = false;
  const waiting = new Set<() => void>();
  clock.after(ms, () => {
    passed = true;
    for (const fire of waiting) fire();
    waiting.clear();
  });
  return {
    within: <T>(work: Promise<T>, late: () => T): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        const fire = (): void => resolve(late());
        if (passed) fire();
        else waiting.add(fire);
        work.then(
          (value) => (waiting.delete(fire), resolve(value)),
          (err: unknown) => (waiting.delete(fire), reject(err as Error)),
        );
      }),
  };
}

/** The warning for a part of the rule that kcp did not answer for in time. */
export function notCheckedInTime(field: string, ms: number): { ok: false; definite: false; message: string } {
  return {
    ok: false,
    definite: false,
    message:
      `${field}: not checked within ${ms / 1000} s (kcp answers slowly); the controller checks it and reports ` +
      "on the rule's status",
  };
}
