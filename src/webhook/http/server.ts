// The webhook's HTTPS server: AdmissionReview admission.k8s.io/v1 at /validate/<provider logical cluster>, at
// /validate-rules and, when enabled, at the legacy /validate (routes.ts), with a certificate reloaded
// when its files change. Each request goes through requests.ts within the limits of limits.ts, answered through
// replies.ts, the caller checked by authenticate.ts.
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { Logger } from "pino";
import type { AdmissionRequest, Decision } from "../admission.ts";
import { callerAuthenticator } from "./authenticate.ts";
import { CertificateReloader, type KeyPair, type TlsFiles } from "./certs.ts";
import type { AdmissionHandler } from "../deletion/handler.ts";
import { CONNECTION_IDLE_MS } from "./connections.ts";
import { Capacity, DEFAULT_LIMITS, MAX_BODY_BYTES, MAX_BUFFERED_BODY_BYTES, type Refusal } from "./limits.ts";
import type { WebhookMetrics } from "../metrics.ts";
import { createOpenRequests, type OpenRequests } from "./origins.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import { answerClientError, createReplies, type Replies } from "./replies.ts";
import { requestServer } from "./requests.ts";

export type { TransportLimits } from "./limits.ts";
export { createOpenRequests } from "./origins.ts";

export interface WebhookServerOptions {
  host?: string;
  port: number;
  tls: TlsFiles;
  handler: AdmissionHandler;
  /** Decides DependencyRule CREATE/UPDATE at /validate-rules; without it that path is 404. */
  ruleHandler?: (request: AdmissionRequest) => Promise<Decision>;
  /**
   * Serve the Go original's `/validate` without a provider segment, which matches the rules of every provider for
   * the deleted group/resource. Default false: `/validate` answers 404 with a message saying the route is disabled
   * and the VWC must point at /validate/<provider logical cluster>.
   */
  legacyValidateRoute?: boolean;
  logger: Logger;
  metrics: WebhookMetrics;
  maxBodyBytes?: number;
  /** DELETE reviews parsed and decided at once (default 16); more wait in a short queue, then get 429. */
  maxConcurrentReviews?: number;
  /** DependencyRule reviews (/validate-rules) decided at once, a pool apart (default 2). */
  maxConcurrentRuleReviews?: number;
  /** Requests with their body in waiting for a slot, per pool (default 64); over it, 429 at once. */
  maxQueuedReviews?: number;
  /** The body must be in whole within this (default 10 s), and arrive at this average rate after 2 s (16 KiB/s). */
  bodyTimeoutMs?: number;
  minBodyBytesPerSecond?: number;
  /** Times the body deadline, the pace checks and the queue wait (default the real clock). */
  clock?: Clock;
  /** Counts open requests by origin, pool and stage (createOpenRequests); default: not counted. */
  openRequests?: OpenRequests;
  /**
   * Body bytes being received at once over all requests (default MAX_BUFFERED_BODY_BYTES), shared fairly: a request
   * needing room takes it from the one holding the most (budget.ts); with none larger, 429.
   */
  maxBufferedBodyBytes?: number;
  /**
   * Open connections (default 256). One past it closes the oldest that has sent no request; with none, its requests
   * get 429 and a close.
   */
  maxConnections?: number;
  /** A connection that has sent no request is closed after this while the cap is near (default 3 s), after 10 s anyway. */
  connectionIdleMs?: number;
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

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.logger;
  const refused = (reason: Refusal): void => opts.onRefusal?.(reason);
  const authenticate = callerAuthenticator({ ...opts, clientCAFile: opts.tls.clientCAFile });
  const limits = limitsOf(opts);
  const clock = opts.clock ?? realClock;
  const capacity = capacityOf(opts, limits, clock, refused);
  const replies = createReplies((code) => opts.metrics.countResponse(code));
  const certs = new CertificateReloader({
    files: opts.tls,
    logger: log,
    onReload: (pair) => server.setSecureContext(tlsOptions(opts, pair)),
    onResult: (result) => opts.metrics.certificateReloads.inc({ result }),
    ...(opts.certPollMs !== undefined ? { pollMs: opts.certPollMs } : {}),
  });
  const serve = requestServer({
    handler: opts.handler,
    ruleHandler: opts.ruleHandler,
    logger: log,
    metrics: opts.metrics,
    maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES,
    limits,
    clock,
    open: opts.openRequests ?? createOpenRequests(),
    legacyValidateRoute: opts.legacyValidateRoute ?? false,
    authenticate,
    capacity,
    replies,
    refused,
  });
  const server = createServer(opts, certs.pair(), serve, replies);
  watchConnections(server, capacity, refused);

  await listen(server, opts.port, opts.host);
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

function limitsOf(opts: WebhookServerOptions) {
  return {
    maxConcurrentReviews: opts.maxConcurrentReviews ?? DEFAULT_LIMITS.maxConcurrentReviews,
    maxConcurrentRuleReviews: opts.maxConcurrentRuleReviews ?? DEFAULT_LIMITS.maxConcurrentRuleReviews,
    maxQueuedReviews: opts.maxQueuedReviews ?? DEFAULT_LIMITS.maxQueuedReviews,
    maxConnections: opts.maxConnections ?? DEFAULT_LIMITS.maxConnections,
    bodyTimeoutMs: opts.bodyTimeoutMs ?? DEFAULT_LIMITS.bodyTimeoutMs,
    minBodyBytesPerSecond: opts.minBodyBytesPerSecond ?? DEFAULT_LIMITS.minBodyBytesPerSecond,
  };
}

/** The limits in use, shown by the metrics; a connection closed for sending nothing counts as a refusal. */
function capacityOf(
  opts: WebhookServerOptions,
  limits: ReturnType<typeof limitsOf>,
  clock: Clock,
  refused: (reason: Refusal) => void,
): Capacity {
  const budgets = {
    maxBufferedBodyBytes: opts.maxBufferedBodyBytes ?? MAX_BUFFERED_BODY_BYTES,
    connectionIdleMs: opts.connectionIdleMs ?? CONNECTION_IDLE_MS,
  };
  const capacity = new Capacity({ ...limits, ...budgets }, clock, {
    open: (n) => opts.metrics.connectionsOpen.set(n),
    closedIdle: () => refused("connection-idle"),
  });
  opts.metrics.readBodyBytesFrom(() => capacity.budget.held);
  return capacity;
}

function tlsOptions(opts: WebhookServerOptions, pair: KeyPair) {
  return {
    cert: pair.cert,
    key: pair.key,
    ...(pair.ca ? { ca: pair.ca } : {}),
    minVersion: opts.minTLSVersion ?? "TLSv1.2",
    ...(opts.cipherSuites ? { ciphers: opts.cipherSuites } : {}),
  };
}

/** Longer than Go's default idle-connection timeout (90 s), which kcp's webhook client uses. */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

function createServer(
  opts: WebhookServerOptions,
  pair: KeyPair,
  serve: ReturnType<typeof requestServer>,
  replies: Replies,
): https.Server {
  const log = opts.logger;
  const server = https.createServer(
    {
      ...tlsOptions(opts, pair),
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
        replies.status(res, 500, "internal error, retry later");
      });
    },
  );
  // kcp's webhook client (Go's http.Transport, as kube-apiserver sets it up) keeps an idle connection for 90 s and
  // reuses it. Node closes an idle keep-alive connection after 5 s by default: a review sent in the instant Node
  // closes fails with EOF ("failed calling webhook ... EOF"), and with failurePolicy Fail that refuses a DELETE no
  // rule refuses. Outlasting the client's idle timeout lets the client always close first.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on("tlsClientError", (err) => log.debug({ err: err.message }, "TLS handshake failed"));
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    answerClientError(err, socket);
    log.debug({ err: err.message }, "bad HTTP request");
  });
  return server;
}

/**
 * Counts connections against the cap from the TCP accept (connections.ts); past twice the cap they are dropped before
 * the handshake costs anything.
 */
function watchConnections(server: https.Server, capacity: Capacity, refused: (reason: Refusal) => void): void {
  // Each request marks its connection as no longer silent first thing (requests.ts).
  server.on("connection", (socket: Socket) => capacity.connections.accepted(socket));
  server.maxConnections = 2 * capacity.connections.max;
  server.on("drop", () => refused("connection-dropped"));
}

function listen(server: https.Server, port: number, host: string | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
