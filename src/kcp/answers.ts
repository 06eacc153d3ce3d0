// kcp's answers: reading a body within a byte cap or a watch stream line by line, and an error answer as ApiError
// (HTTP status, the Status object whole: reason, message, details).
import http from "node:http";
import type { Readable } from "node:stream";

/** A metav1.Status as the API server sends it with an error; `details.causes` carries a webhook's blockers. */
export interface ApiStatus {
  code?: number;
  reason?: string;
  message?: string;
  details?: { causes?: { reason?: string; message?: string; field?: string }[]; [key: string]: unknown };
  [key: string]: unknown;
}

/** An error answer from the API server: the HTTP status, the Status object's reason and message, and the Status. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly method: string;
  readonly url: string;
  /** The Status's message, or the body's text (at most 500 characters) when the body was not a Status. */
  readonly statusMessage: string;
  /** The Status object as sent, details included; undefined when the body was not a JSON object. */
  readonly apiStatus: ApiStatus | undefined;

  constructor(method: string, url: string, status: number, reason: string, message: string, apiStatus?: ApiStatus) {
    super(`${method} ${url}: ${status} ${reason}: ${message}`);
    this.name = "ApiError";
    this.status = status;
    this.reason = reason;
    this.method = method;
    this.url = url;
    this.statusMessage = message;
    this.apiStatus = apiStatus;
  }
}

export function isApiError(err: unknown, status?: number): err is ApiError {
  return err instanceof ApiError && (status === undefined || err.status === status);
}

/** A response body larger than the reader allows; nothing past `maxBytes` was kept. */
export class BodyTooLargeError extends Error {
  readonly maxBytes: number;
  readonly url: string;

  constructor(method: string, url: string, maxBytes: number, what: string) {
    super(`${method} ${url}: ${what} is over the ${maxBytes}-byte limit; dropped unread`);
    this.name = "BodyTooLargeError";
    this.maxBytes = maxBytes;
    this.url = url;
  }
}

/** Reads a whole body of at most `maxBytes`; refuses a larger declared length up front, and stops reading past it. */
export async function readBody(
  res: http.IncomingMessage,
  maxBytes: number,
  method: string,
  url: string,
): Promise<string> {
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    throw new BodyTooLargeError(method, url, maxBytes, `the answer (content-length ${declared})`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      res.destroy();
      throw new BodyTooLargeError(method, url, maxBytes, "the answer");
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Calls `onLine` for each non-empty line of a streamed answer (a watch: one JSON event per line) until it ends. */
export async function readLines(res: Readable, onLine: (line: string) => void): Promise<void> {
  res.setEncoding("utf8");
  // A line's pieces are kept apart and joined once its newline arrives: growing one string chunk by chunk and
  // searching it from the start copied a 1 MiB object (a hostile consumer's) some 60 times over, as garbage.
  let pieces: string[] = [];
  for await (const chunk of res as AsyncIterable<string>) {
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf("\n", start)) >= 0) {
      pieces.push(chunk.slice(start, nl));
      const line = pieces.join("").trim();
      pieces = [];
      start = nl + 1;
      if (line !== "") onLine(line);
    }
    if (start < chunk.length) pieces.push(chunk.slice(start));
  }
}

export function toApiError(method: string, url: string, status: number, text: string): ApiError {
  let reason = http.STATUS_CODES[status] ?? "Unknown";
  let message = text.trim().slice(0, 500);
  let apiStatus: ApiStatus | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) apiStatus = parsed as ApiStatus;
  } catch {
    // not a Status object: keep the raw text
  }
  if (typeof apiStatus?.reason === "string" && apiStatus.reason !== "") reason = apiStatus.reason;
  if (typeof apiStatus?.message === "string" && apiStatus.message !== "") message = apiStatus.message;
  return new ApiError(method, url, status, reason, message, apiStatus);
}
