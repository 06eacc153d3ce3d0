// One admission request from arrival to answer. Transport checks run before any logic, in this order: connection
// cap, caller, route, method, content type, review slot; then the body (size, budget, JSON) and the envelope. A
// problem with a readable uid is answered as a denying AdmissionReview (the API server shows its message); without
// one, with an HTTP error and a JSON Status. Nothing here throws out of a request.
import type http from "node:http";
import type { Logger } from "pino";
import { badRequest, internalError, type AdmissionRequest, type Decision } from "../admission.ts";
import type { Authenticate } from "./authenticate.ts";
import type { AdmissionHandler } from "../deletion/handler.ts";
import { BodyError, readBody, type Capacity, type Refusal } from "./limits.ts";
import type { WebhookMetrics } from "../metrics.ts";
import type { Replies } from "./replies.ts";
import { parseReview, reviewReply } from "./review.ts";
import { VALIDATE_RULES_ROUTE } from "../../api/wire.ts";
import { LEGACY_ROUTE_DISABLED, route, type Route } from "./routes.ts";

export interface RequestDeps {
  handler: AdmissionHandler;
  /** Decides DependencyRule CREATE/UPDATE at /validate-rules; without it that path is 404. */
  ruleHandler?: ((request: AdmissionRequest) => Promise<Decision>) | undefined;
  logger: Logger;
  metrics: WebhookMetrics;
  maxBodyBytes: number;
  /** Serve the legacy /validate (no provider: rules of every provider match); off, it answers 404. */
  legacyValidateRoute: boolean;
  authenticate: Authenticate;
  capacity: Capacity;
  replies: Replies;
  refused: (reason: Refusal) => void;
}

type Served = Extract<Route, { ok: true }>;

/** The request listener's body: answers every request, and resolves once the answer is out or refused. */
export function requestServer(
  deps: RequestDeps,
): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  const { capacity, replies, refused } = deps;
  let legacyWarned = false;
  return async (req, res) => {
    if (capacity.isOverCapacity(req.socket)) {
      refused("too-many-connections");
      const message = `the webhook has ${capacity.maxConnections} connections open, retry in a second`;
      return replies.refuse(req, res, 429, message);
    }
    const unauthenticated = deps.authenticate(req);
    if (unauthenticated !== undefined) {
      refused("unauthenticated");
      return replies.refuse(req, res, 401, `${unauthenticated}: only kcp may call this webhook`);
    }
    // Answers before the body is read close the connection, so an unread body is never parsed as the next request.
    const r = route(req.url ?? "/", { legacyValidateRoute: deps.legacyValidateRoute });
    if (!r.ok) {
      if (r.message === LEGACY_ROUTE_DISABLED && !legacyWarned) {
        legacyWarned = true; // once: a VWC still pointing at /validate would otherwise log on every DELETE
        deps.logger.warn({ remote: req.socket.remoteAddress }, r.message);
      }
      return replies.refuse(req, res, r.code, r.message);
    }
    if (r.rules && !deps.ruleHandler)
      return replies.refuse(req, res, 404, `no handler for ${VALIDATE_RULES_ROUTE}: rule checks are off`);
    if (req.method !== "POST")
      return replies.refuse(req, res, 405, `method ${req.method} not allowed: POST an AdmissionReview`);
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      const message = `content type ${JSON.stringify(type ?? "")} not supported: want application/json`;
      return replies.refuse(req, res, 415, message);
    }
    if (!capacity.startReview()) {
      refused("too-many-reviews");
      const message = `the webhook is deciding ${capacity.maxReviews} reviews already, retry in a second`;
      return replies.refuse(req, res, 429, message);
    }
    try {
      await review(deps, req, res, r);
    } finally {
      capacity.endReview();
    }
  };
}

/** Reads and parses the body, checks the envelope, and answers with the handler's decision (fail closed). */
async function review(deps: RequestDeps, req: http.IncomingMessage, res: http.ServerResponse, r: Served) {
  const { replies, logger: log } = deps;
  let body: unknown;
  try {
    const raw = await readBody(req, deps.maxBodyBytes, deps.capacity.budget);
    if (raw.length === 0) return replies.status(res, 400, "request body is empty: want an AdmissionReview");
    body = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    if (err instanceof BodyError) {
      // Stop reading an oversize upload; the reply still goes out, then the connection closes.
      deps.refused(err.code === 413 ? "body-too-large" : "body-budget");
      return replies.refuse(req, res, err.code, err.message);
    }
    return replies.status(res, 400, `request body is not JSON: ${(err as Error).message}`);
  }
  const parsed = parseReview(body);
  if (!parsed.ok) {
    log.warn({ uid: parsed.uid, problem: parsed.message }, "malformed admission review");
    deps.metrics.decisions.inc({ outcome: "errored", reason: "bad-request" });
    if (parsed.uid === undefined) return replies.status(res, 400, parsed.message);
    return replies.json(res, 200, reviewReply(parsed.uid, badRequest(parsed.message)));
  }
  let decision: Decision;
  try {
    decision =
      r.rules && deps.ruleHandler
        ? await deps.ruleHandler(parsed.request)
        : await deps.handler(parsed.request, r.provider);
  } catch (err) {
    // The handler does not throw by design; if it does anyway, deny (fail closed) and say why.
    log.error({ uid: parsed.request.uid, err: String(err) }, "admission handler failed");
    decision = internalError("internal error, retry later", err instanceof Error ? err.message : String(err));
  }
  replies.json(res, 200, reviewReply(parsed.request.uid, decision));
}
