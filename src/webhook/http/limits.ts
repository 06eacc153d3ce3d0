// The transport's limits (body size and pace, body bytes held at once, review slots and queue, open connections), the
// counters that enforce them, and reading a request body within them.
import type http from "node:http";
import type { Clock, Timer } from "../../util/clock.ts";
import { BodyBudget, type BodyHold } from "./budget.ts";
import { CONNECTION_MAX_IDLE_MS, Connections, type ConnectionHooks } from "./connections.ts";
import { ReviewPool } from "./pool.ts";

/**
 * Largest review body read. A DELETE review carries the stored object as `oldObject` (`object` is null), and kcp
 * stores no object over 1.5 MiB (etcd's request limit); the envelope (userInfo, options) adds a few KiB. 2 MiB fits
 * every genuine review with room to spare, where the API server's own 3 MiB would let a forged one cost about 52 MiB
 * of heap once parsed. A DependencyRule review (/validate-rules) is far smaller.
 */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/**
 * Body bytes held at once, over all requests, from the first byte until a slot is taken: 8 largest bodies. Shared
 * fairly (budget.ts): a request needing room takes it from the one holding the most.
 */
export const MAX_BUFFERED_BODY_BYTES = 8 * MAX_BODY_BYTES;

/** A request's bytes are checked against the minimum rate this often, and only after this grace. */
export const BODY_CHECK_MS = 1_000;
export const BODY_RATE_GRACE_MS = 2_000;

/** How long a request whose body is in waits for a review slot before 429: well inside kcp's 10 s webhook timeout. */
export const QUEUE_WAIT_MS = 2_000;

/**
 * The limits operators set (flags of the webhook, values of the chart). Reviews: a body costs up to about 17 times
 * its size once parsed, and a decision takes milliseconds (index) to a few hundred (live), so 16 slots carry thousands
 * of reviews per second. Rule reviews ask kcp about the provider's exports, so they get their own small pool: a flood
 * of them never takes a DELETE review's slot. The body must arrive whole within `bodyTimeoutMs`, and after the first
 * two seconds at `minBodyBytesPerSecond` on average: kcp sends a review in one burst, so only a stranger trickles.
 */
export interface TransportLimits {
  maxConcurrentReviews: number;
  maxConcurrentRuleReviews: number;
  /** Requests with their body in, waiting for a slot (each pool); over it, 429 at once. */
  maxQueuedReviews: number;
  /**
   * Open connections served; one past it closes the oldest that has sent no request, or else gets 429 and is closed
   * (connections.ts). kcp keeps a few per API server.
   */
  maxConnections: number;
  bodyTimeoutMs: number;
  minBodyBytesPerSecond: number;
}

export const DEFAULT_LIMITS: TransportLimits = {
  maxConcurrentReviews: 16,
  maxConcurrentRuleReviews: 2,
  maxQueuedReviews: 64,
  maxConnections: 256,
  bodyTimeoutMs: 10_000,
  minBodyBytesPerSecond: 16 * 1024,
};

/** Why a request or connection was turned away; counted through `onRefusal`. */
export type Refusal =
  | "too-many-reviews"
  | "too-many-rule-reviews"
  | "too-many-connections"
  | "connection-idle"
  | "body-budget"
  | "body-preempted"
  | "body-too-large"
  | "body-too-slow"
  | "unauthenticated"
  | "connection-dropped";

type BodyRefusal = Extract<Refusal, "body-budget" | "body-preempted" | "body-too-large" | "body-too-slow">;
const CODES: Record<BodyRefusal, 408 | 413 | 429> = {
  "body-too-slow": 408,
  "body-too-large": 413,
  "body-budget": 429,
  "body-preempted": 429,
};

/**
 * A body that was not read: 408 (too slow, or not whole in time), 413 (too large), 429 (no room among the bytes held
 * at once, or its room taken by a smaller request: it held the most).
 */
export class BodyError extends Error {
  readonly code: 408 | 413 | 429;
  readonly reason: BodyRefusal;
  constructor(reason: BodyRefusal, message: string) {
    super(message);
    this.reason = reason;
    this.code = CODES[reason];
  }

  /** Whether the connection is closed after the answer: the caller trickled, or held the most bytes. */
  get cutsOff(): boolean {
    return this.reason === "body-too-slow" || this.reason === "body-preempted";
  }
}

export interface BodyRules {
  maxBytes: number;
  budget: BodyBudget;
  clock: Clock;
  timeoutMs: number;
  minBytesPerSecond: number;
}

/** A body read whole; its bytes stay counted against the budget until `release`. */
export interface ReceivedBody {
  body: Buffer;
  release(): void;
}

/**
 * Reads the body up to `maxBytes` (a larger one is refused as soon as it is seen: 413), whole within `timeoutMs` and,
 * after the grace, at `minBytesPerSecond` (else 408). Every byte held counts against `budget` (no room: 429; room
 * taken by a smaller request: 429 too); on success the bytes stay counted until the caller releases them, once it
 * no longer holds the raw body waiting.
 */
export async function readBody(req: http.IncomingMessage, rules: BodyRules): Promise<ReceivedBody> {
  const { maxBytes } = rules;
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes)
    throw new BodyError("body-too-large", `request body of ${declared} bytes exceeds the limit of ${maxBytes} bytes`);
  // Node's HTTP parser emits the request before it parses the rest of the same read: one microtask later, a body that
  // arrived with its headers (kcp's review, a few KiB in one write, does) waits whole in the stream's buffer (the
  // parser passes on no more than content-length). Read then, it needs no listeners and no pace timer.
  await Promise.resolve();
  const whole = declared > 0 && req.readableLength === declared && req.readableFlowing === null;
  return whole ? readBuffered(req, rules) : readStreamed(req, rules);
}

/** A body already received whole, read from the stream's buffer at once, within the same limits. */
function readBuffered(req: http.IncomingMessage, rules: BodyRules): ReceivedBody {
  // Nothing else runs until it is settled below, so no other request can take this one's room meanwhile.
  const hold = rules.budget.hold(() => undefined);
  const chunks: Buffer[] = [];
  for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
    const refused = taken(hold, chunk, rules.maxBytes);
    if (refused) {
      hold.release();
      throw refused;
    }
    chunks.push(chunk);
  }
  hold.settle();
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, hold.bytes);
  return { body, release: () => hold.release() };
}

/** Counts `chunk` against the size limit and the budget; the refusal when it does not fit. */
function taken(hold: BodyHold, chunk: Buffer, maxBytes: number): BodyError | undefined {
  if (hold.bytes + chunk.length > maxBytes)
    return new BodyError("body-too-large", `request body exceeds the limit of ${maxBytes} bytes`);
  if (!hold.take(chunk.length)) return new BodyError("body-budget", NO_ROOM);
  return undefined;
}

/** A body still arriving: read as it comes, against the deadline and the minimum pace too. */
function readStreamed(req: http.IncomingMessage, rules: BodyRules): Promise<ReceivedBody> {
  const { clock } = rules;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const start = clock.now();
    let timer: Timer | undefined;
    const hold = rules.budget.hold(() => finish(new BodyError("body-preempted", PREEMPTED)));
    const finish = (err?: Error): void => {
      timer?.cancel();
      req.off("data", onData).off("end", onEnd).off("error", finish).off("close", onClose);
      if (!err)
        return void (
          hold.settle(),
          // kcp's review arrives in one chunk: no copy then.
          resolve({
            body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, hold.bytes),
            release: () => hold.release(),
          })
        );
      hold.release();
      reject(err);
    };
    const onData = (chunk: Buffer): void => {
      const refused = taken(hold, chunk, rules.maxBytes);
      if (refused) return finish(refused);
      chunks.push(chunk);
    };
    const onEnd = (): void => finish();
    const onClose = (): void => finish(new Error("the connection closed before the body was in"));
    let last = start;
    let lag = 0;
    const check = (): void => {
      const now = clock.now();
      const late = now - last - BODY_CHECK_MS;
      last = now;
      timer = clock.after(BODY_CHECK_MS, check);
      // A check that ran late means the event loop was busy: bytes may be waiting unread, so judge next time, and do
      // not count the busy time against the caller's pace.
      if (late > BODY_CHECK_MS) return void (lag += late);
      const elapsed = now - start;
      if (elapsed >= rules.timeoutMs)
        return finish(new BodyError("body-too-slow", `request body not received whole within ${rules.timeoutMs} ms`));
      if (hold.bytes < (rules.minBytesPerSecond * Math.max(0, elapsed - lag - BODY_RATE_GRACE_MS)) / 1000)
        return finish(
          new BodyError("body-too-slow", `request body arriving slower than ${rules.minBytesPerSecond} bytes/s`),
        );
    };
    req.on("data", onData).on("end", onEnd).on("error", finish).on("close", onClose);
    timer = clock.after(BODY_CHECK_MS, check);
  });
}

const NO_ROOM = "the webhook is receiving too many request bodies at once, retry in a second";
const PREEMPTED =
  "the webhook needed room for other requests, and this body held the most of the bytes received at once: retry";

/**
 * What the server tells of its limits as they are used: connections open and closed as silent. The body bytes held
 * are read from `budget.held` when the metrics are scraped.
 */
export type CapacityHooks = ConnectionHooks;

/** The server's use of its limits: open connections, body bytes held, and the two review pools. */
export class Capacity {
  readonly connections: Connections;
  readonly budget: BodyBudget;
  /** DELETE reviews (/validate/...), and DependencyRule reviews (/validate-rules) apart from them. */
  readonly deletes: ReviewPool;
  readonly rules: ReviewPool;

  constructor(
    limits: TransportLimits & { maxBufferedBodyBytes: number; connectionIdleMs: number },
    clock: Clock,
    hooks: CapacityHooks = {},
  ) {
    const idleMs = limits.connectionIdleMs;
    const maxIdleMs = Math.max(idleMs, CONNECTION_MAX_IDLE_MS);
    this.connections = new Connections({ max: limits.maxConnections, idleMs, maxIdleMs }, clock, hooks);
    this.budget = new BodyBudget(limits.maxBufferedBodyBytes);
    const queue = { maxQueued: limits.maxQueuedReviews, maxWaitMs: QUEUE_WAIT_MS };
    this.deletes = new ReviewPool({ slots: limits.maxConcurrentReviews, ...queue }, clock);
    this.rules = new ReviewPool({ slots: limits.maxConcurrentRuleReviews, ...queue }, clock);
  }
}
