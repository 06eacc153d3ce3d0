// The one bounded-concurrency helper: never more than `limit` in flight, answers in the items' order, a slow item holds
// one slot only (the others keep going), and an empty list or a limit below one still finishes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { mapLimit } from "../../src/util/concurrency.ts";

/** An item's work that ends when the test says so; counts what is in flight. */
function gate() {
  let inFlight = 0;
  let most = 0;
  const waiting = new Map<number, () => void>();
  const fn = (i: number): Promise<number> => {
    inFlight++;
    most = Math.max(most, inFlight);
    return new Promise<number>((resolve) =>
      waiting.set(i, () => {
        inFlight--;
        resolve(i * 10);
      }),
    );
  };
  return { fn, waiting, most: () => most, inFlight: () => inFlight };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

test("at most `limit` in flight; a slow item holds one slot while the rest go on; answers in order", async () => {
  const g = gate();
  const done = mapLimit([0, 1, 2, 3, 4, 5], 2, g.fn);
  await settle();
  assert.deepEqual([...g.waiting.keys()], [0, 1]);
  // Item 0 is slow: finishing 1 starts 2, finishing 2 starts 3, while 0 still runs.
  g.waiting.get(1)!();
  await settle();
  g.waiting.get(2)!();
  await settle();
  assert.deepEqual([...g.waiting.keys()], [0, 1, 2, 3]);
  for (const i of [0, 3, 4, 5]) {
    await settle();
    g.waiting.get(i)!();
  }
  assert.deepEqual(await done, [0, 10, 20, 30, 40, 50]);
  assert.equal(g.most(), 2);
});

test("an empty list answers at once; a limit below one still runs one at a time", async () => {
  assert.deepEqual(await mapLimit([], 4, () => Promise.resolve(1)), []);
  const g = gate();
  const done = mapLimit([1, 2], 0, g.fn);
  await settle();
  assert.deepEqual([...g.waiting.keys()], [1]);
  g.waiting.get(1)!();
  await settle();
  g.waiting.get(2)!();
  assert.deepEqual(await done, [10, 20]);
  assert.equal(g.most(), 1);
});
