// Every answer the webhook's HTTP layer sends: JSON bodies and Status errors (each counted by code), refusals sent
// without reading the body, and the raw answer to a request Node could not parse as HTTP.
import type http from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Decision } from "../admission.ts";
import { reviewReplyText, statusBody } from "./review.ts";

const REASONS: Record<number, string> = {
  400: "BadRequest",
  404: "NotFound",
  405: "MethodNotAllowed",
  401: "Unauthorized",
  408: "Timeout",
  413: "RequestEntityTooLarge",
  429: "TooManyRequests",
  415: "UnsupportedMediaType",
  500: "InternalError",
};

export interface Replies {
  /** Sends the AdmissionReview answering `uid` with `decision` (HTTP 200), counted by the decision's own code. */
  review(res: http.ServerResponse, uid: string, decision: Decision): void;
  /** Sends a Status error with `code` and `message`. */
  status(res: http.ServerResponse, code: number, message: string): void;
  /** Turns a request away without reading its body: the reply goes out, the rest of the upload is discarded. */
  refuse(req: http.IncomingMessage, res: http.ServerResponse, code: number, message: string): void;
}

/** The replies of one server; `count` is called once per response with the code it carries. */
export function createReplies(count: (code: number) => void): Replies {
  const send = (res: http.ServerResponse, status: number, counted: number, text: string): void => {
    if (res.headersSent) return;
    count(counted);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
  };
  const review = (res: http.ServerResponse, uid: string, decision: Decision): void =>
    send(res, 200, decision.allowed ? 200 : decision.code, reviewReplyText(uid, decision));
  const status = (res: http.ServerResponse, code: number, message: string): void =>
    send(res, code, code, JSON.stringify(statusBody(code, REASONS[code] ?? "Unknown", message)));
  const refuse = (req: http.IncomingMessage, res: http.ServerResponse, code: number, message: string): void => {
    res.setHeader("connection", "close");
    if (code === 429) res.setHeader("retry-after", "1");
    status(res, code, message);
    // An oversize upload is cut off once the answer is out: decrypting and discarding megabytes a flood sends would
    // cost the CPU that genuine reviews need. Anything else is drained, so the caller reads the answer.
    // Taken now: req and res let go of the socket once the answer is out (and it may be gone already).
    const socket = (res.socket ?? req.socket) as Socket | null;
    if (code === 413) res.once("finish", () => socket?.destroy());
    else req.resume();
  };
  return { review, status, refuse };
}

/** Answers a request Node's HTTP parser rejected (malformed, or not received in time) and closes the socket. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const timeout = err.code === "ERR_HTTP_REQUEST_TIMEOUT";
  const [code, reason, message] = timeout
    ? [408, "Timeout", "request not received in time"]
    : [400, "BadRequest", "malformed HTTP request"];
  const text = JSON.stringify(statusBody(code, reason, message));
  const head = `HTTP/1.1 ${code} ${timeout ? "Request Timeout" : "Bad Request"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}`;
  if (socket.writable) socket.end(`${head}\r\nconnection: close\r\n\r\n${text}`);
}
