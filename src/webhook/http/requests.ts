// One admission request from arrival to answer. Transport checks run before any logic, in this order: connection
// cap, caller, route, method, content type; then the body (size, pace, bytes held at once), and only once it is in
// whole a review slot of the route's pool (DELETE reviews, or DependencyRule reviews apart), then JSON and the
// envelope. A problem with a readable uid is answered as a denying AdmissionReview (the API server shows its
// message); without one, with an HTTP error and a JSON Status. Nothing here throws out of a request.
import type http from "node:http";
import type { Logger } from "pino";
import { badRequest, internalError, type AdmissionRequest, type Decision } from "../admission.ts";
import { clip, logSafe } from "../../observability/clip.ts";
import type { Clock } from "../../util/clock.ts";
import type { Authenticate } from "./authenticate.ts";
import type { AdmissionHandler } from "../deletion/handler.ts";
import { BodyError, readBody, type Capacity, type ReceivedBody, type Refusal, type TransportLimits } from "./limits.ts";
import { countDecision, type WebhookMetrics } from "../metrics.ts";
import type { OpenRequest, OpenRequests } from "./origins.ts";
import type { Replies } from "./replies.ts";
import { parseReview } from "./review.ts";
import { VALIDATE_RULES_ROUTE } from "../../api/wire.ts";
import { LEGACY_ROUTE_DISABLED, route, type Route } from "./routes.ts";

export interface RequestDeps {
  handler: AdmissionHandler;
  /** Decides DependencyRule CREATE/UPDATE at /validate-rules; without it that path is 404. */
  ruleHandler?: ((request: AdmissionRequest) => Promise<Decision>) | undefined;
  logger: Logger;
  metrics: WebhookMetrics;
  maxBodyBytes: number;
  limits: Pick<TransportLimits, "bodyTimeoutMs" | "minBodyBytesPerSecond">;
  clock: Clock;
  /** Serve the legacy /validate (no provider: rules of every provider match); off, it answers 404. */
  legacyValidateRoute: boolean;
  authenticate: Authenticate;
  capacity: Capacity;
  open: OpenRequests;
  replies: Replies;
  refused: (reason: Refusal) => void;
}

type Served = Extract<Route, { ok: true }>;
type Serve = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

/** The request listener's body: answers every request, and resolves once the answer is out or refused. */
export function requestServer(deps: RequestDeps): Serve {
  const accepted = transportChecks(deps);
  return async (req, res) => {
    const r = accepted(req, res);
    if (!r) return;
    const open = deps.open.begin(req.socket.remoteAddress, r.rules ? "rules" : "deletes");
    try {
      const body = await receive(deps, req, res, open);
      if (body) await inSlot(deps, req, res, r, open, body);
    } finally {
      open.end();
    }
  };
}

/** The checks that need no body; a refused request is answered here and gets undefined. */
function transportChecks(deps: RequestDeps): (req: http.IncomingMessage, res: http.ServerResponse) => Served | void {
  const { capacity, replies, refused } = deps;
  const routeOf = memoized((url) => route(url, { legacyValidateRoute: deps.legacyValidateRoute }));
  let legacyWarned = false;
  return (req, res) => {
    if (capacity.connections.requested(req.socket)) {
      refused("too-many-connections");
      const message = `the webhook has ${capacity.connections.max} connections open, retry in a second`;
      return replies.refuse(req, res, 429, message);
    }
    const unauthenticated = deps.authenticate(req);
    if (unauthenticated !== undefined) {
      refused("unauthenticated");
      return replies.refuse(req, res, 401, `${unauthenticated}: only kcp may call this webhook`);
    }
    // Answers before the body is read close the connection, so an unread body is never parsed as the next request.
    const r = routeOf(req.url ?? "/");
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
      return replies.refuse(req, res, 405, `method ${String(clip(req.method))} not allowed: POST an AdmissionReview`);
    const given = req.headers["content-type"];
    // kcp sends exactly this; anything else is read as a media type with parameters.
    const type = given === "application/json" ? given : (given ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") {
      const message = `content type ${JSON.stringify(clip(type ?? ""))} not supported: want application/json`;
      return replies.refuse(req, res, 415, message);
    }
    return r;
  };
}

/**
 * `f` remembering its answers for up to 64 arguments at once (then it starts over): kcp calls the same few URLs, and
 * matching one costs a regular expression, a decode and a name check on every review otherwise.
 */
function memoized<T>(f: (key: string) => T): (key: string) => T {
  const known = new Map<string, T>();
  return (key) => {
    const hit = known.get(key);
    if (hit !== undefined) return hit;
    const value = f(key);
    if (known.size >= 64) known.clear();
    known.set(key, value);
    return value;
  };
}

/** The whole body, or undefined once a refusal is sent. Its bytes stay counted until the request has a slot. */
async function receive(
  deps: RequestDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  open: OpenRequest,
): Promise<ReceivedBody | undefined> {
  open.stage("receiving");
  try {
    return await readBody(req, {
      maxBytes: deps.maxBodyBytes,
      budget: deps.capacity.budget,
      clock: deps.clock,
      timeoutMs: deps.limits.bodyTimeoutMs,
      minBytesPerSecond: deps.limits.minBodyBytesPerSecond,
    });
  } catch (err) {
    if (!(err instanceof BodyError)) return void req.socket.destroy(); // the caller went away
    deps.refused(err.reason);
    // A trickling upload, or one that held the most bytes, is cut off once the answer is out, like an oversize one:
    // its connection is the attack, and draining it would hold the bytes it was refused for.
    if (err.cutsOff) res.once("finish", () => req.socket.destroy());
    deps.replies.refuse(req, res, err.code, err.message);
    return undefined;
  }
}

/** Waits for a slot of the route's pool (bounded), then parses and decides; the slot is given back after. */
async function inSlot(
  deps: RequestDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  r: Served,
  open: OpenRequest,
  received: ReceivedBody,
): Promise<void> {
  const pool = r.rules ? deps.capacity.rules : deps.capacity.deletes;
  const free = pool.acquire(() => open.stage("queued"));
  const slot = free === true ? free : await free;
  received.release();
  if (slot !== true) {
    deps.refused(r.rules ? "too-many-rule-reviews" : "too-many-reviews");
    const what = r.rules ? "DependencyRule reviews" : "reviews";
    return deps.replies.refuse(
      req,
      res,
      429,
      `the webhook is deciding ${pool.slots} ${what} already, retry in a second`,
    );
  }
  try {
    if (req.socket.destroyed) return; // the caller gave up while it waited: nobody would read the answer
    open.stage("deciding");
    await review(deps, res, r, received.body);
  } finally {
    pool.release();
  }
}

/** Parses the body, checks the envelope, and answers with the handler's decision (fail closed). */
async function review(deps: RequestDeps, res: http.ServerResponse, r: Served, raw: Buffer): Promise<void> {
  const { replies, logger: log } = deps;
  if (raw.length === 0) return replies.status(res, 400, "request body is empty: want an AdmissionReview");
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    return replies.status(res, 400, `request body is not JSON: ${String(clip((err as Error).message))}`);
  }
  const parsed = parseReview(body);
  if (!parsed.ok) {
    // uid and problem are the caller's text: clipped, so a forged review cannot write a megabyte log line.
    log.warn(logSafe({ uid: parsed.uid, problem: parsed.message }), "malformed admission review");
  }
  const decision = parsed.ok ? await decideReview(deps, r, parsed.request) : badRequest(parsed.message);
  // Every review's answer is counted here, and only here, whoever decided it.
  countDecision(deps.metrics, decision);
  const uid = parsed.ok ? parsed.request.uid : parsed.uid;
  // Without a uid there is no review to answer: an HTTP error with the same message.
  if (uid === undefined) return replies.status(res, 400, parsed.ok ? "" : parsed.message);
  replies.review(res, uid, decision);
}

/** The handler's decision for the route; the handlers do not throw by design, and if one does, it is a denial. */
async function decideReview(deps: RequestDeps, r: Served, request: AdmissionRequest): Promise<Decision> {
  try {
    return r.rules && deps.ruleHandler ? await deps.ruleHandler(request) : await deps.handler(request, r.provider);
  } catch (err) {
    // Fail closed, and say why in the log.
    deps.logger.error(logSafe({ uid: request.uid, err: String(err) }), "admission handler failed");
    return internalError("internal error, retry later", err instanceof Error ? err.message : String(err));
  }
}
