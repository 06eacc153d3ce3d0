// The single-key work loop on a fake clock: bursts coalesce, a change during a pass causes exactly one more, errors
// back off on schedule, requeues and resyncs run when due. Time is the fake clock's; nothing here sleeps.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { silentLogger } from "../../src/observability/logger.ts";
import { WorkLoop, type PassResult } from "../../src/util/workloop.ts";
import { FakeClock } from "../support/fake-clock.ts";

function loop(pass: (clock: FakeClock) => Promise<PassResult | void>, over: { resyncMs?: number } = {}) {
  const clock = new FakeClock();
  const l = new WorkLoop({
    pass: () => pass(clock),
    logger: silentLogger(),
    resyncMs: over.resyncMs ?? 60_000,
    debounceMs: 5,
    backoffBaseMs: 40,
    backoffMaxMs: 1_000,
    clock,
  });
  return { l, clock };
}

/** A promise the test resolves by hand: a pass that is "still running" until then. */
function gate() {
  let open = (): void => undefined;
  const done = new Promise<void>((r) => (open = r));
  return { done, open };
}

describe("WorkLoop", () => {
  it("coalesces a burst of events into one pass", async () => {
    let passes = 0;
    const { l, clock } = loop(async () => void passes++);
    l.start();
    for (let i = 0; i < 100; i++) l.enqueue();
    await clock.advance(4);
    assert.equal(passes, 0, "nothing before the debounce window ends");
    await clock.advance(1);
    assert.equal(passes, 1);
    await clock.advance(1_000);
    assert.equal(passes, 1);
    await l.stop();
  });

  it("runs exactly one more pass for events during a pass, never two at once", async () => {
    let passes = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const first = gate();
    const { l, clock } = loop(async () => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      passes++;
      if (passes === 1) {
        for (let i = 0; i < 10; i++) l.enqueue();
        await first.done;
      }
      concurrent--;
    });
    l.start();
    await clock.advance(5);
    assert.equal(passes, 1);
    await clock.advance(100);
    assert.equal(passes, 1, "the events wait for the running pass");
    first.open();
    await clock.advance(5);
    assert.equal(passes, 2);
    await clock.advance(1_000);
    assert.equal(passes, 2);
    assert.equal(maxConcurrent, 1);
    await l.stop();
  });

  it("retries a failing pass after 40, 80, 160 ms and resets after a success", async () => {
    const at: number[] = [];
    const { l, clock } = loop(async (c) => {
      at.push(c.now());
      if (at.length <= 3) throw new Error("boom");
    });
    l.start();
    await clock.advance(1_000);
    assert.deepEqual(at, [5, 45, 125, 285]);
    assert.equal(l.consecutiveFailures, 0);
    await l.stop();
  });

  it("an event during a backoff runs a pass at once (a fix applies without waiting out the backoff)", async () => {
    const at: number[] = [];
    const { l, clock } = loop(async (c) => {
      at.push(c.now());
      if (at.length === 1) throw new Error("boom");
    });
    l.start();
    await clock.advance(10);
    l.enqueue();
    await clock.advance(5);
    assert.deepEqual(at, [5, 15]);
    await l.stop();
  });

  it("honours requeueAfterMs and the resync period", async () => {
    const at: number[] = [];
    const { l, clock } = loop(async (c) => (at.push(c.now()) === 1 ? { requeueAfterMs: 10 } : undefined), {
      resyncMs: 40,
    });
    l.start();
    await clock.advance(100);
    // start (debounced 5), requeue (+10), resyncs at 40 and 80 (each debounced 5).
    assert.deepEqual(at, [5, 15, 45, 85]);
    await l.stop();
  });

  it("stops: waits for the running pass and runs no more", async () => {
    let passes = 0;
    let finished = false;
    const running = gate();
    const { l, clock } = loop(async () => {
      passes++;
      await running.done;
      finished = true;
    });
    l.start();
    await clock.advance(5);
    l.enqueue();
    const stopped = l.stop();
    running.open();
    await stopped;
    assert.equal(finished, true);
    await clock.advance(120_000);
    assert.equal(passes, 1);
    assert.equal(clock.pending(), 0, "no timer left behind");
  });
});
