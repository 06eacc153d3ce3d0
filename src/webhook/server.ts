// The HTTPS transport: AdmissionReview admission.k8s.io/v1 at /validate/<provider logical cluster> (the URL the
// controller writes into each provider's VWC), at /validate (legacy: no provider, match across all), and at
// /validate-rules (DependencyRule CREATE/UPDATE, from the dep-ctrl workspace's configuration).
// Transport checks run before any logic: method, path, content type, body size, JSON, envelope. A problem with a
// readable uid is answered as a denying AdmissionReview (the API server shows its message); without one, with an
// HTTP error and a JSON Status. Nothing here throws out of a request.
import https from "node:https";
import type http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import type { LogicalClusterName } from "../api/types.ts";
import { CertificateReloader, type KeyPair, type TlsFiles } from "./certs.ts";
import { checkCaller, parseSubjectMatchers, type SubjectMatcher } from "./callers.ts";
import { badRequest, internalError, type AdmissionRequest, type Decision } from "./admission.ts";
import type { AdmissionHandler } from "./handler.ts";
import type { WebhookMetrics } from "./metrics.ts";
import { parseReview, reviewReply, statusBody } from "./review.ts";

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

const LOGICAL_CLUSTER_RE = /^[a-z0-9]([a-z0-9:-]*[a-z0-9])?$/;

export interface WebhookServerOptions {
  host?: string;
  port: number;
  tls: TlsFiles;
  handler: AdmissionHandler;
  /** Decides DependencyRule CREATE/UPDATE at /validate-rules; without it that path is 404. */
  ruleHandler?: (request: AdmissionRequest) => Promise<Decision>;
  logger: Logger;
  metrics: WebhookMetrics;
  maxBodyBytes?: number;
  /** Reviews parsed and decided at once (default MAX_CONCURRENT_REVIEWS); over it, 429. */
  maxConcurrentReviews?: number;
  /** Body bytes being received at once over all requests (default MAX_BUFFERED_BODY_BYTES); over it, 429. */
  maxBufferedBodyBytes?: number;
  /** Open TLS connections (default MAX_CONNECTIONS); a request on a connection past it gets 429 and a close. */
  maxConnections?: number;
  /** Time allowed to receive the headers, and the whole request, before the socket is dropped. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  certPollMs?: number;
  /**
   * Require a client certificate signed by a CA in `tls.clientCAFile` (reloaded like the serving pair). Without a
   * valid one the caller gets 401 and no decision. Default: off (any caller is answered).
   */
  requireClientCert?: boolean;
  /** With requireClientCert: `CN=<name>`, `O=<organization>` or `DNS=<SAN name>` entries; empty admits any signed cert. */
  allowedClientSubjects?: readonly string[];
  /** Lowest TLS version accepted (default TLSv1.2). */
  minTLSVersion?: "TLSv1.2" | "TLSv1.3";
  /** OpenSSL cipher list for TLS 1.2 (TLS 1.3 suites are Node's defaults); default Node's. */
  cipherSuites?: string;
  /** Called once per refused request or connection, e.g. to count it by reason. */
  onRefusal?: (reason: Refusal) => void;
}

export interface WebhookServer {
  readonly port: number;
  /** Re-reads the certificate files now (also happens on file events and every poll); true when a new pair is served. */
  reloadCertificate(): boolean;
  close(): Promise<void>;
}

type Route =
  { ok: true; provider: LogicalClusterName | undefined; rules?: true } | { ok: false; code: number; message: string };

export const RULES_PATH = "/validate-rules";

/** `/validate`, `/validate/<logical cluster>` or `/validate-rules`; anything else is not ours. */
export function route(url: string): Route {
  const path = url.split("?")[0] ?? "";
  if (path === RULES_PATH) return { ok: true, provider: undefined, rules: true };
  if (path === "/validate" || path === "/validate/") return { ok: true, provider: undefined };
  const m = /^\/validate\/([^/]+)\/?$/.exec(path);
  if (!m) return { ok: false, code: 404, message: `no handler for ${path}: use /validate/<provider logical cluster>` };
  let cluster: string;
  try {
    cluster = decodeURIComponent(m[1] ?? "");
  } catch {
    cluster = m[1] ?? "";
  }
  if (!LOGICAL_CLUSTER_RE.test(cluster)) {
    return { ok: false, code: 400, message: `${JSON.stringify(cluster)} in the URL is not a logical cluster name` };
  }
  return { ok: true, provider: cluster as LogicalClusterName };
}

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

/** Every response goes out here, and is counted here: `code` is the HTTP status, or a review's own status code. */
function sendJsonCounted(res: http.ServerResponse, status: number, body: unknown, count: (code: number) => void): void {
  if (res.headersSent) return;
  const review = (body as { response?: { allowed?: boolean; status?: { code?: number } } }).response;
  count(review ? (review.allowed ? 200 : (review.status?.code ?? 500)) : status);
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

function sendStatusCounted(
  res: http.ServerResponse,
  code: number,
  message: string,
  count: (code: number) => void,
): void {
  sendJsonCounted(res, code, statusBody(code, REASONS[code] ?? "Unknown", message), count);
}

class BodyError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** Bytes of request bodies held at once, over all requests. */
interface BodyBudget {
  take(n: number): boolean;
  give(n: number): void;
}

/**
 * Reads the body up to `limit` bytes; a larger one is refused as soon as it is seen (413). Every byte held counts
 * against `budget` until the caller gives it back; when the budget is spent the request is refused (429).
 */
async function readBody(req: http.IncomingMessage, limit: number, budget: BodyBudget): Promise<Buffer> {
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

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const limit = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const maxReviews = opts.maxConcurrentReviews ?? MAX_CONCURRENT_REVIEWS;
  const maxConnections = opts.maxConnections ?? MAX_CONNECTIONS;
  const log = opts.logger;
  const refused = (reason: Refusal): void => opts.onRefusal?.(reason);
  if (opts.requireClientCert && opts.tls.clientCAFile === undefined) {
    throw new Error("requireClientCert needs tls.clientCAFile: the CA bundle that signs callers' certificates");
  }
  const parsedSubjects = parseSubjectMatchers(opts.allowedClientSubjects ?? []);
  if ("error" in parsedSubjects) throw new Error(parsedSubjects.error);
  const matchers: readonly SubjectMatcher[] = parsedSubjects;
  const tlsOptions = (pair: KeyPair) => ({
    cert: pair.cert,
    key: pair.key,
    ...(pair.ca ? { ca: pair.ca } : {}),
    minVersion: opts.minTLSVersion ?? "TLSv1.2",
    ...(opts.cipherSuites ? { ciphers: opts.cipherSuites } : {}),
  });
  const certs = new CertificateReloader({
    files: opts.tls,
    logger: log,
    onReload: (pair) => server.setSecureContext(tlsOptions(pair)),
    onResult: (result) => opts.metrics.certificateReloads.inc({ result }),
    ...(opts.certPollMs !== undefined ? { pollMs: opts.certPollMs } : {}),
  });

  const count = (code: number): void => opts.metrics.responses.inc({ code: String(code) });
  const sendJson = (res: http.ServerResponse, status: number, body: unknown): void =>
    sendJsonCounted(res, status, body, count);
  const sendStatus = (res: http.ServerResponse, code: number, message: string): void =>
    sendStatusCounted(res, code, message, count);
  /** Turns a request away without reading its body: the reply goes out, the rest of the upload is discarded. */
  const refuse = (req: http.IncomingMessage, res: http.ServerResponse, code: number, message: string): void => {
    res.setHeader("connection", "close");
    if (code === 429) res.setHeader("retry-after", "1");
    sendStatus(res, code, message);
    // An oversize upload is cut off once the answer is out: decrypting and discarding megabytes a flood sends would
    // cost the CPU that genuine reviews need. Anything else is drained, so the caller reads the answer.
    // Taken now: req and res let go of the socket once the answer is out (and it may be gone already).
    const socket = (res.socket ?? req.socket) as Socket | null;
    if (code === 413) res.once("finish", () => socket?.destroy());
    else req.resume();
  };

  let buffered = 0;
  const budgetBytes = opts.maxBufferedBodyBytes ?? MAX_BUFFERED_BODY_BYTES;
  const budget: BodyBudget = {
    take: (n) => (buffered + n > budgetBytes ? false : ((buffered += n), true)),
    give: (n) => void (buffered -= n),
  };
  let reviews = 0;
  const overCapacity = new WeakSet<object>();
  let connections = 0;

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (overCapacity.has(req.socket)) {
      refused("too-many-connections");
      return refuse(req, res, 429, `the webhook has ${maxConnections} connections open, retry in a second`);
    }
    if (opts.requireClientCert) {
      const socket = req.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      const verdict = checkCaller(
        {
          authorized: socket.authorized,
          ...(socket.authorizationError ? { authorizationError: String(socket.authorizationError) } : {}),
          ...(peer && Object.keys(peer).length > 0
            ? { subject: peer.subject ?? {}, ...(peer.subjectaltname ? { subjectAltName: peer.subjectaltname } : {}) }
            : {}),
        },
        matchers,
      );
      if (!verdict.ok) {
        // What the webhook saw, so an operator can tell a missing certificate from a wrong CA or subject.
        log.warn(
          { caller: verdict.seen, remote: req.socket.remoteAddress, path: (req.url ?? "").slice(0, 200) },
          `caller refused: ${verdict.message}`,
        );
        refused("unauthenticated");
        return refuse(req, res, 401, `${verdict.message}: only kcp may call this webhook`);
      }
    }
    // Answers before the body is read close the connection, so an unread body is never parsed as the next request.
    const r = route(req.url ?? "/");
    if (!r.ok) return refuse(req, res, r.code, r.message);
    const ruleHandler = opts.ruleHandler;
    if (r.rules && !ruleHandler) return refuse(req, res, 404, `no handler for ${RULES_PATH}: rule checks are off`);
    if (req.method !== "POST")
      return refuse(req, res, 405, `method ${req.method} not allowed: POST an AdmissionReview`);
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      return refuse(req, res, 415, `content type ${JSON.stringify(type ?? "")} not supported: want application/json`);
    }
    if (reviews >= maxReviews) {
      refused("too-many-reviews");
      return refuse(req, res, 429, `the webhook is deciding ${maxReviews} reviews already, retry in a second`);
    }
    reviews++;
    try {
      await review(req, res, r);
    } finally {
      reviews--;
    }
  }

  async function review(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    r: Extract<Route, { ok: true }>,
  ): Promise<void> {
    const ruleHandler = opts.ruleHandler;
    let body: unknown;
    try {
      const raw = await readBody(req, limit, budget);
      if (raw.length === 0) return sendStatus(res, 400, "request body is empty: want an AdmissionReview");
      body = JSON.parse(raw.toString("utf8"));
    } catch (err) {
      if (err instanceof BodyError) {
        // Stop reading an oversize upload; the reply still goes out, then the connection closes.
        refused(err.code === 413 ? "body-too-large" : "body-budget");
        return refuse(req, res, err.code, err.message);
      }
      return sendStatus(res, 400, `request body is not JSON: ${(err as Error).message}`);
    }
    const parsed = parseReview(body);
    if (!parsed.ok) {
      log.warn({ uid: parsed.uid, problem: parsed.message }, "malformed admission review");
      opts.metrics.decisions.inc({ outcome: "errored", reason: "bad-request" });
      if (parsed.uid === undefined) return sendStatus(res, 400, parsed.message);
      return sendJson(res, 200, reviewReply(parsed.uid, badRequest(parsed.message)));
    }
    let decision: Decision;
    try {
      decision =
        r.rules && ruleHandler ? await ruleHandler(parsed.request) : await opts.handler(parsed.request, r.provider);
    } catch (err) {
      // The handler does not throw by design; if it does anyway, deny (fail closed) and say why.
      log.error({ uid: parsed.request.uid, err: String(err) }, "admission handler failed");
      decision = internalError("internal error, retry later", err instanceof Error ? err.message : String(err));
    }
    sendJson(res, 200, reviewReply(parsed.request.uid, decision));
  }

  const pair = certs.pair();
  const server = https.createServer(
    {
      ...tlsOptions(pair),
      // Ask for a certificate but verify it per request: a caller without one gets a 401 that says why, and the log
      // says what it presented, instead of a bare handshake failure.
      ...(opts.requireClientCert ? { requestCert: true, rejectUnauthorized: false } : {}),
      handshakeTimeout: 10_000,
      headersTimeout: opts.headersTimeoutMs ?? 10_000,
      requestTimeout: opts.requestTimeoutMs ?? 30_000,
    },
    (req, res) => {
      serve(req, res).catch((err: unknown) => {
        // Unreachable by design; fail closed if it happens anyway.
        log.error({ err: String(err) }, "unexpected error serving admission request");
        sendStatus(res, 500, "internal error, retry later");
      });
    },
  );
  server.on("secureConnection", (socket: TLSSocket) => {
    connections++;
    if (connections > maxConnections) overCapacity.add(socket);
    socket.once("close", () => connections--);
  });
  // Past twice the cap, connections are dropped before the handshake, so a flood cannot cost a handshake each.
  server.maxConnections = 2 * maxConnections;
  server.on("drop", () => refused("connection-dropped"));
  server.on("tlsClientError", (err) => log.debug({ err: err.message }, "TLS handshake failed"));
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    const timeout = err.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const [code, reason, message] = timeout
      ? [408, "Timeout", "request not received in time"]
      : [400, "BadRequest", "malformed HTTP request"];
    const text = JSON.stringify(statusBody(code, reason, message));
    const head = `HTTP/1.1 ${code} ${timeout ? "Request Timeout" : "Bad Request"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}`;
    if (socket.writable) socket.end(`${head}\r\nconnection: close\r\n\r\n${text}`);
    log.debug({ err: err.message }, "bad HTTP request");
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (err) => log.error({ err: err.message }, "webhook server error"));
  certs.start();
  const port = (server.address() as AddressInfo).port;
  log.info({ host: opts.host, port }, "webhook serving");

  return {
    port,
    reloadCertificate: () => certs.check(),
    close: () =>
      new Promise<void>((resolve) => {
        certs.stop();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
