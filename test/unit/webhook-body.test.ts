// Reading a review body within its limits, on a stream standing for the request and a clock the test moves: size,
// bytes held at once, the deadline, the minimum pace, and no refusal when the event loop itself was late.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type http from "node:http";
import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import type { Clock, Timer } from "../../src/util/clock.ts";
import { BodyBudget } from "../../src/webhook/http/budget.ts";
import { BodyError, readBody } from "../../src/webhook/http/limits.ts";
import { FakeClock } from "../support/fake-clock.ts";

/** A request body stream with the given headers. */
function request(headers: Record<string, string> = {}): PassThrough & { headers: Record<string, string> } {
  return Object.assign(new PassThrough(), { headers });
}

const budget = (max: number) => new BodyBudget(max);

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
    const received = await body;
    assert.equal(received.body.toString(), "hello");
    assert.equal(b.held, 5);
    received.release();
    received.release();
    assert.equal(b.held, 0);
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
    await assert.rejects(body, (err) => err instanceof BodyError && err.code === 429 && err.reason === "body-budget");
    assert.equal(b.held, 0);
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
    await new Promise(setImmediate); // the stream is not complete: it is read as it comes, with the pace check armed
    assert.ok(due, "the pace check is armed");
    now = 5_000; // the first check runs 4 s late: nothing read yet, but the bytes may be waiting
    due?.();
    r.end("x".repeat(600));
    assert.equal((await body).body.length, 600);
  });
});

describe("readBody of a body parsed whole with its headers (kcp's one write)", () => {
  /** A clock that counts the timers armed on it. */
  const counting = (): Clock & { armed: number } => {
    const clock = new FakeClock();
    const c = { armed: 0, now: () => clock.now(), sleep: clock.sleep.bind(clock) } as Clock & { armed: number };
    c.after = (ms, fn) => (c.armed++, clock.after(ms, fn));
    return c;
  };

  /** Sends `raw` (request line, headers, body) to a real node:http server in one write: what `read` returns or throws. */
  async function serve(raw: string, read: (req: http.IncomingMessage) => Promise<unknown>): Promise<unknown> {
    let outcome: Promise<unknown> | undefined;
    const server = createServer((req, res) => {
      outcome = read(req)
        .catch((err: unknown) => err)
        .finally(() => res.end());
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    socket.end(raw);
    socket.resume();
    await new Promise((done) => socket.on("close", done));
    server.close();
    return outcome;
  }
  const post = (body: string, headers = `content-length: ${Buffer.byteLength(body)}`) =>
    `POST /validate/x HTTP/1.1\r\nhost: a\r\n${headers}\r\nconnection: close\r\n\r\n${body}`;

  it("reads it from the stream's buffer with no pace timer, its bytes counted until released", async () => {
    const clock = counting();
    const b = budget(4096);
    const got = (await serve(post("x".repeat(700)), async (req) => {
      const received = await readBody(req, rules(clock, b));
      assert.equal(b.held, 700, "counted while the request waits for a slot");
      received.release();
      return received.body.toString();
    })) as string;
    assert.equal(got, "x".repeat(700));
    assert.equal(b.held, 0);
    assert.equal(clock.armed, 0, "no pace timer for a body already in whole");
  });

  it("keeps the budget on that path (429 with no room), and reads a chunked body as it comes", async () => {
    const b = budget(100);
    const clock = counting();
    const full = await serve(post("z".repeat(200)), (req) => readBody(req, rules(clock, b)));
    assert.ok(full instanceof BodyError && full.reason === "body-budget", String(full));
    assert.equal(b.held, 0);
    assert.equal(clock.armed, 0);
    const chunked = (n: number) => `${n.toString(16)}\r\n${"y".repeat(n)}\r\n0\r\n\r\n`;
    const streamed = await serve(post(chunked(300), "transfer-encoding: chunked"), async (req) => {
      const received = await readBody(req, rules(clock, budget(4096)));
      return received.body.length;
    });
    assert.equal(streamed, 300);
    assert.equal(clock.armed, 1, "no length to know it whole by: read as it comes, with the pace check");
  });
});

describe("BodyBudget: a fair share of the bytes held at once", () => {
  it("gives a request that needs room the room of the one holding the most, which is refused (body-preempted)", async () => {
    const b = budget(1000);
    const stalled = request();
    const big = readBody(as(stalled), { ...rules(new FakeClock(), b), maxBytes: 2048 });
    stalled.write("x".repeat(990)); // stalls just short of the budget
    const small = request();
    const genuine = readBody(as(small), rules(new FakeClock(), b));
    small.end("y".repeat(100));
    const received = await genuine;
    assert.equal(received.body.length, 100);
    await assert.rejects(big, (err) => err instanceof BodyError && err.reason === "body-preempted" && err.cutsOff);
    assert.equal(b.held, 100);
  });

  it("takes room only from a request that would still hold more than the one asking, the largest first", () => {
    const b = budget(100);
    const preempted: string[] = [];
    const hold = (name: string) => b.hold(() => preempted.push(name));
    const [a, c, d] = [hold("a"), hold("c"), hold("d")];
    assert.ok(a.take(50) && c.take(30) && d.take(20));
    assert.equal(d.take(10), true, "d would hold 30, a holds 50: a gives way");
    assert.deepEqual(preempted, ["a"]);
    assert.equal(d.take(50), false, "c holds 30, less than d would: no trading places");
    assert.deepEqual([b.held, a.bytes, c.bytes, d.bytes], [60, 0, 30, 30]);
    assert.equal(a.take(1), false, "a was refused: its hold takes nothing more");
    assert.equal(a.bytes, 0);
  });

  it("never takes room from a body already in whole, and gives all of it back once", () => {
    const b = budget(100);
    const preempted: string[] = [];
    const whole = b.hold(() => preempted.push("whole"));
    assert.ok(whole.take(90));
    whole.settle();
    const next = b.hold(() => preempted.push("next"));
    assert.equal(next.take(20), false);
    assert.deepEqual(preempted, []);
    whole.release();
    whole.release();
    assert.equal(b.held, 0);
    assert.equal(next.take(20), true);
  });

  it("keeps each of many connections to an equal share while a newcomer needs room", () => {
    const b = budget(1024);
    let preempted = 0;
    const holds = Array.from({ length: 16 }, () => b.hold(() => preempted++));
    for (const h of holds) assert.ok(h.take(64));
    const newcomer = b.hold(() => assert.fail("the newcomer holds the least"));
    for (let i = 0; i < 64; i++) assert.ok(newcomer.take(1), `byte ${i}`);
    assert.equal(preempted, 1, "one stalled upload made room for 64 bytes");
    assert.ok(Math.max(...holds.map((h) => h.bytes)) <= 64);
  });
});
