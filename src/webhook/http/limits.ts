// The transport's limits (body size, body bytes held at once, reviews decided at once, open connections), the
// counters that enforce them, and reading a request body within them.
import type http from "node:http";
import type { TLSSocket } from "node:tls";

/**
 * Largest review body read. A DELETE review carries the stored object as `oldObject` (`object` is null), and kcp
 * stores no object over 1.5 MiB (etcd's request limit); the envelope (userInfo, options) adds a few KiB. 2 MiB fits
 * every genuine review with room to spare, where the API server's own 3 MiB would let a forged one cost about 52 MiB
 * of heap once parsed (issue 13). A DependencyRule review (/validate-rules) is far smaller.
 */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/**
 * Reviews parsed and decided at once. A body costs up to about 17 times its size once parsed (3 MiB measured at
 * 52 MiB), so 16 reviews of the largest body stay near 550 MiB of raw-to-parsed worst case only for pathological
 * JSON; typical reviews are a few KiB and a decision takes milliseconds, so 16 slots carry thousands of reviews per
 * second. Over it: 429 at once.
 */
export const MAX_CONCURRENT_REVIEWS = 16;

/** Body bytes being received at once, over all connections: 8 largest bodies. Over it: 429 at once. */
export const MAX_BUFFERED_BODY_BYTES = 8 * MAX_BODY_BYTES;

/** Open TLS connections served; a connection past it gets 429 and is closed. kcp keeps a few per API server. */
export const MAX_CONNECTIONS = 256;

/** Why a request or connection was turned away; counted through `onRefusal`. */
export type Refusal =
  | "too-many-reviews"
  | "too-many-connections"
  | "body-budget"
  | "body-too-large"
  | "unauthenticated"
  | "connection-dropped";

/** A body that was not read: 413 (over the size limit) or 429 (over the budget of bytes held at once). */
export class BodyError extends Error {
  readonly code: 413 | 429;
  constructor(code: 413 | 429, message: string) {
    super(message);
    this.code = code;
  }
}

/** Bytes of request bodies held at once, over all requests. */
export interface BodyBudget {
  take(n: number): boolean;
  give(n: number): void;
}

/**
 * Reads the body up to `limit` bytes; a larger one is refused as soon as it is seen (413). Every byte held counts
 * against `budget` until the caller gives it back; when the budget is spent the request is refused (429).
 */
export async function readBody(req: http.IncomingMessage, limit: number, budget: BodyBudget): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > limit)
    throw new BodyError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      const n = (chunk as Buffer).length;
      size += n;
      if (size > limit) throw new BodyError(413, `request body exceeds the limit of ${limit} bytes`);
      if (!budget.take(n)) {
        size -= n;
        throw new BodyError(429, "the webhook is receiving too many request bodies at once, retry in a second");
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    budget.give(size);
    throw err;
  }
  const body = Buffer.concat(chunks);
  budget.give(size);
  return body;
}

/** The server's use of its limits: open connections, reviews in flight, body bytes held. */
export class Capacity {
  readonly maxReviews: number;
  readonly maxConnections: number;
  readonly budget: BodyBudget;
  private reviews = 0;
  private connections = 0;
  private readonly overCapacity = new WeakSet<object>();

  constructor(limits: { maxReviews: number; maxConnections: number; maxBufferedBodyBytes: number }) {
    this.maxReviews = limits.maxReviews;
    this.maxConnections = limits.maxConnections;
    let buffered = 0;
    this.budget = {
      take: (n) => (buffered + n > limits.maxBufferedBodyBytes ? false : ((buffered += n), true)),
      give: (n) => void (buffered -= n),
    };
  }

  /** Counts a new connection until it closes; one past the cap is marked, and its requests are refused. */
  connectionOpened(socket: TLSSocket): void {
    this.connections++;
    if (this.connections > this.maxConnections) this.overCapacity.add(socket);
    socket.once("close", () => this.connections--);
  }

  isOverCapacity(socket: object): boolean {
    return this.overCapacity.has(socket);
  }

  /** Takes a review slot; false when all are in use. Give it back with endReview. */
  startReview(): boolean {
    if (this.reviews >= this.maxReviews) return false;
    this.reviews++;
    return true;
  }

  endReview(): void {
    this.reviews--;
  }
}
