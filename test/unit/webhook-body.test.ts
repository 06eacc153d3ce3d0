// Reading a review body within its limits, on a stream standing for the request and a clock the test moves: size,
// bytes held at once, the deadline, the minimum pace, and no refusal when the event loop itself was late.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type http from "node:http";
import { PassThrough } from "node:stream";
import type { Clock, Timer } from "../../src/util/clock.ts";
import { BodyError, readBody, type BodyBudget } from "../../src/webhook/http/limits.ts";
import { FakeClock } from "../support/fake-clock.ts";

/** A request body stream with the given headers. */
function request(headers: Record<string, string> = {}): PassThrough & { headers: Record<string, string> } {
  return Object.assign(new PassThrough(), { headers });
}

function budget(max: number): BodyBudget & { held: () => number } {
  let held = 0;
  return {
    take: (n) => (held + n > max ? false : ((held += n), true)),
    give: (n) => void (held -= n),
    held: () => held,
  };
}

const rules = (clock: Clock, b: BodyBudget) => ({
  maxBytes: 1024,
  budget: b,
  clock,
  timeoutMs: 10_000,
  minBytesPerSecond: 100,
});

const as = (r: PassThrough) => r as unknown as http.IncomingMessage;

describe("readBody", () => {
  it("returns the whole body and keeps its bytes counted until the caller gives them back", async () => {
    const b = budget(4096);
    const r = request();
    const body = readBody(as(r), rules(new FakeClock(), b));
    r.end("hello");
    assert.equal((await body).toString(), "hello");
    assert.equal(b.held(), 5);
  });

  it("refuses an oversize body (413) and one over the bytes held at once (429), giving the bytes back", async () => {
    const b = budget(10);
    await assert.rejects(readBody(as(request({ "content-length": "2048" })), rules(new FakeClock(), b)), {
      code: 413,
    });
    const r = request();
    const body = readBody(as(r), rules(new FakeClock(), b));
    r.write("0123456789");
    r.write("x");
    await assert.rejects(body, (err) => err instanceof BodyError && err.code === 429);
    assert.equal(b.held(), 0);
  });

  it("refuses a trickle once past the grace, and a body not whole by the deadline", async () => {
    const clock = new FakeClock();
    const slow = request();
    const trickle = readBody(as(slow), rules(clock, budget(4096)));
    slow.write("x");
    const rejected = assert.rejects(trickle, /arriving slower than 100 bytes\/s/);
    await clock.advance(4_000);
    await rejected;

    const paced = request();
    const late = readBody(as(paced), { ...rules(clock, budget(4096)), minBytesPerSecond: 1 });
    paced.write("x".repeat(100));
    const timedOut = assert.rejects(late, /not received whole within 10000 ms/);
    await clock.advance(10_000);
    await timedOut;
  });

  it("does not refuse a body because the event loop was busy when a check was due", async () => {
    // A clock whose one timer the test fires by hand, after moving time as far as it likes.
    let now = 0;
    let due: (() => void) | undefined;
    const clock: Clock = {
      now: () => now,
      sleep: () => Promise.resolve(),
      after: (_ms, fn): Timer => ((due = fn), { cancel: () => (due = undefined) }),
    };
    const r = request();
    const body = readBody(as(r), rules(clock, budget(4096)));
    now = 5_000; // the first check runs 4 s late: nothing read yet, but the bytes may be waiting
    due?.();
    r.end("x".repeat(600));
    assert.equal((await body).length, 600);
  });
});
