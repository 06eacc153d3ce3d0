// The single-key loop: bursts coalesce, a change during a pass causes exactly one more, errors back off.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { SingleKeyLoop } from "../../src/controller/loop.ts";
import { silentLogger } from "../../src/observability/logger.ts";

function loop(pass: () => Promise<{ requeueAfterMs?: number } | void>, over: { resyncMs?: number } = {}) {
  return new SingleKeyLoop({
    pass,
    logger: silentLogger(),
    resyncMs: over.resyncMs ?? 60_000,
    debounceMs: 5,
    backoffBaseMs: 40,
    backoffMaxMs: 1_000,
  });
}

describe("SingleKeyLoop", () => {
  it("coalesces a burst of events into one pass", async () => {
    let passes = 0;
    const l = loop(async () => void passes++);
    l.start();
    for (let i = 0; i < 100; i++) l.enqueue();
    await sleep(60);
    await l.stop();
    assert.equal(passes, 1);
  });

  it("runs exactly one more pass for events during a pass, never two at once", async () => {
    let passes = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const l = loop(async () => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      passes++;
      if (passes === 1) for (let i = 0; i < 10; i++) l.enqueue();
      await sleep(20);
      concurrent--;
    });
    l.start();
    await sleep(150);
    await l.stop();
    assert.equal(passes, 2);
    assert.equal(maxConcurrent, 1);
  });

  it("retries a failing pass with growing delays and resets after a success", async () => {
    const at: number[] = [];
    const l = loop(async () => {
      at.push(Date.now());
      if (at.length <= 3) throw new Error("boom");
    });
    l.start();
    await sleep(450);
    await l.stop();
    assert.equal(at.length, 4, `passes at ${at.map((t) => t - at[0]!).join(",")}`);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    assert.ok(gaps[0]! >= 35 && gaps[1]! >= 75 && gaps[2]! >= 155, `gaps ${gaps.join(",")}`);
    assert.equal(l.consecutiveFailures, 0);
  });

  it("honours requeueAfterMs and the resync period", async () => {
    let passes = 0;
    const l = loop(async () => (++passes === 1 ? { requeueAfterMs: 10 } : undefined), { resyncMs: 40 });
    l.start();
    await sleep(30);
    assert.equal(passes, 2);
    await sleep(70);
    await l.stop();
    assert.ok(passes >= 3, `resync ran: ${passes}`);
  });

  it("stops: waits for the running pass and runs no more", async () => {
    let passes = 0;
    let finished = false;
    const l = loop(async () => {
      passes++;
      await sleep(30);
      finished = true;
    });
    l.start();
    await sleep(10);
    l.enqueue();
    await l.stop();
    assert.equal(finished, true);
    await sleep(50);
    assert.equal(passes, 1);
  });
});
