// The HTTPS transport: AdmissionReview admission.k8s.io/v1 at /validate/<provider logical cluster> (the URL the
// controller writes into each provider's VWC), at /validate (legacy: no provider, match across all), and at
// /validate-rules (DependencyRule CREATE/UPDATE, from the dep-ctrl workspace's configuration).
// Transport checks run before any logic: method, path, content type, body size, JSON, envelope. A problem with a
// readable uid is answered as a denying AdmissionReview (the API server shows its message); without one, with an
// HTTP error and a JSON Status. Nothing here throws out of a request.
import https from "node:https";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { LogicalClusterName } from "../api/types.ts";
import { CertificateReloader, type TlsFiles } from "./certs.ts";
import { badRequest, internalError, type AdmissionRequest, type Decision } from "./admission.ts";
import type { AdmissionHandler } from "./handler.ts";
import type { WebhookMetrics } from "./metrics.ts";
import { parseReview, reviewReply, statusBody } from "./review.ts";

/** The API server's own limit for admission request bodies (3 MiB); a larger one is not a real review. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

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
  /** Time allowed to receive the headers, and the whole request, before the socket is dropped. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  certPollMs?: number;
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
  408: "Timeout",
  413: "RequestEntityTooLarge",
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

/** Reads the body up to `limit` bytes; a larger one is refused as soon as it is seen (413). */
async function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > limit)
    throw new BodyError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyError(413, `request body exceeds the limit of ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const limit = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const log = opts.logger;
  const certs = new CertificateReloader({
    files: opts.tls,
    logger: log,
    onReload: (pair) => server.setSecureContext({ ...pair, minVersion: "TLSv1.2" }),
    onResult: (result) => opts.metrics.certificateReloads.inc({ result }),
    ...(opts.certPollMs !== undefined ? { pollMs: opts.certPollMs } : {}),
  });

  const count = (code: number): void => opts.metrics.responses.inc({ code: String(code) });
  const sendJson = (res: http.ServerResponse, status: number, body: unknown): void =>
    sendJsonCounted(res, status, body, count);
  const sendStatus = (res: http.ServerResponse, code: number, message: string): void =>
    sendStatusCounted(res, code, message, count);

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const r = route(req.url ?? "/");
    if (!r.ok) return sendStatus(res, r.code, r.message);
    const ruleHandler = opts.ruleHandler;
    if (r.rules && !ruleHandler) return sendStatus(res, 404, `no handler for ${RULES_PATH}: rule checks are off`);
    if (req.method !== "POST") return sendStatus(res, 405, `method ${req.method} not allowed: POST an AdmissionReview`);
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      return sendStatus(res, 415, `content type ${JSON.stringify(type ?? "")} not supported: want application/json`);
    }
    let body: unknown;
    try {
      const raw = await readBody(req, limit);
      if (raw.length === 0) return sendStatus(res, 400, "request body is empty: want an AdmissionReview");
      body = JSON.parse(raw.toString("utf8"));
    } catch (err) {
      if (err instanceof BodyError) {
        // Stop reading an oversize upload; the reply still goes out, then the connection closes.
        res.setHeader("connection", "close");
        sendStatus(res, err.code, err.message);
        req.resume();
        return;
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
      ...pair,
      minVersion: "TLSv1.2",
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
  server.on("tlsClientError", (err) => log.debug({ err: err.message }, "TLS handshake failed"));
  server.on("clientError", (err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
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
