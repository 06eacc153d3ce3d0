// Runs one admission request through the decision: registry match → plan → lookups (the I/O, in parallel, under
// one deadline) → cluster-wide retries → decide. It never throws: anything unexpected becomes a 500 denial (fail
// closed). It owns the per-decision log line and its timing; the decision is counted where the answer goes out
// (countDecision in metrics.ts, called by http/requests.ts).
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import { CLUSTER_ANNOTATION, type LogicalClusterName } from "../../api/types.ts";
import {
  internalError,
  outcomeOf,
  type AdmissionRequest,
  type Decision,
  type Lookup,
  type LookupResult,
} from "../admission.ts";
import { clusterWideRetries, decide, planLookups, type LookupPlan } from "./decision.ts";
import { readNamed, type Named } from "./target.ts";
import type { DependentFinder } from "./finder.ts";
import type { WebhookMetrics } from "../metrics.ts";
import type { RuleRegistry } from "../rules/registry.ts";
import { logSafe } from "../../observability/clip.ts";

export interface HandlerOptions {
  /** The current registry, or undefined while it is not yet synced. */
  registry: () => RuleRegistry | undefined;
  finder: DependentFinder;
  logger: Logger;
  metrics: WebhookMetrics;
  /** Deadline for all lookups of one request (plus up to 100 ms: reviews started together share one); below the API
   * server's 10 s webhook timeout so our message wins. */
  lookupTimeoutMs?: number;
}

export type AdmissionHandler = (
  request: AdmissionRequest,
  provider: LogicalClusterName | undefined,
) => Promise<Decision>;

export function createAdmissionHandler(opts: HandlerOptions): AdmissionHandler {
  const timeoutMs = opts.lookupTimeoutMs ?? 8_000;
  const deadline = lookupDeadlines(timeoutMs);

  async function runLookup(lookup: Lookup, limit: number, signal: AbortSignal): Promise<LookupResult> {
    const start = performance.now();
    let result: LookupResult;
    try {
      const answer = await opts.finder.find(lookup, limit, signal);
      // "Unavailable" refuses the DELETE like a failed list (with 503 rather than 500), and is counted like one.
      result = answer.ok
        ? answer
        : {
            ok: false,
            error: answer.detail,
            unavailable: answer.message,
            ...(answer.seen ? { seen: answer.seen } : {}),
          };
    } catch (err) {
      result = { ok: false, error: signal.aborted ? `no answer within ${timeoutMs} ms` : errorMessage(err) };
    }
    const outcome = !result.ok ? "error" : result.notBound ? "not-bound" : "ok";
    opts.metrics.lookupTimes.observe(outcome, (performance.now() - start) / 1000);
    if (!result.ok) opts.metrics.lookupErrors.inc();
    return result;
  }

  async function decideRequest(
    request: AdmissionRequest,
    provider: LogicalClusterName | undefined,
    named: Named,
  ): Promise<Decision> {
    const registry = opts.registry();
    const g = request.resource;
    const match = registry ? registry.find(provider, { group: g.group, resource: g.resource }) : "not-synced";
    const plan = planLookups(request, match, named);
    if (plan.kind === "decided") return plan.decision;
    return decide(plan, await lookAll(plan, runLookup, deadline()));
  }

  return async (request, provider) => {
    const start = performance.now();
    // The object the review names, read once: the decision and its log line use the same reading.
    const named = readNamed(request);
    let decision: Decision;
    try {
      decision = await decideRequest(request, provider, named);
    } catch (err) {
      decision = internalError(
        `internal error deciding ${request.operation} of ${request.resource.resource}/${request.name ?? ""}, retry later`,
        errorMessage(err),
      );
    }
    opts.metrics.decisionTimes.observe(outcomeOf(decision), (performance.now() - start) / 1000);
    logDecision(opts.logger, request, { provider, named }, decision);
    return decision;
  };
}

/** The plan's lookups in parallel, then its cluster-wide retries, all under one deadline, told when they are over. */
async function lookAll(
  plan: LookupPlan,
  run: (lookup: Lookup, limit: number, signal: AbortSignal) => Promise<LookupResult>,
  deadline: Deadline,
): Promise<LookupResult[]> {
  const { signal } = deadline;
  try {
    const results = await Promise.all(plan.lookups.map((l) => run(l, plan.limit, signal)));
    for (const [i, lookup] of clusterWideRetries(plan, results)) results[i] = await run(lookup, plan.limit, signal);
    return results;
  } finally {
    deadline.done();
  }
}

/** Reviews starting within this long of each other share one deadline signal (lookupDeadlines). */
const DEADLINE_WINDOW_MS = 100;

/** The deadline of one review's lookups: the signal they watch, and `done` once they are over. */
interface Deadline {
  signal: AbortSignal;
  done(): void;
}

/** One window's deadline: its signal, its timer, and the reviews of the window whose lookups are still running. */
interface DeadlineWindow {
  controller: AbortController;
  closes: number;
  running: number;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The lookups' deadline: a signal shared by the reviews that start within one window of DEADLINE_WINDOW_MS, aborted
 * `ms` after the window closes, so each review gets between `ms` and `ms` plus the window. One timer per window, not
 * one per review set and cleared, and cleared once the window is closed and its lookups are over: at kcp's pace (an
 * allowed review's lookups take microseconds) no timer ever fires, and the process is not woken for one. Not
 * AbortSignal.timeout per review: its timer cannot be cleared, so every review would leave one pending for the whole
 * timeout.
 */
function lookupDeadlines(ms: number): () => Deadline {
  // One reason for every abort: a DOMException captures a stack when made, which cost more than the abort itself.
  const reason = new DOMException(`no answer within ${ms} ms`, "TimeoutError");
  let current: DeadlineWindow | undefined;
  const open = (now: number): DeadlineWindow => {
    const controller = new AbortController();
    // The lookups of every review in the window may listen at once; each removes its listener when done.
    setMaxListeners(0, controller.signal);
    const w: DeadlineWindow = { controller, closes: now + DEADLINE_WINDOW_MS, running: 0 };
    const expire = (): void => {
      if (w.running > 0) controller.abort(reason);
    };
    w.timer = setTimeout(expire, ms + DEADLINE_WINDOW_MS).unref();
    return w;
  };
  return () => {
    const now = performance.now();
    if (!current || now >= current.closes) {
      if (current?.running === 0) clearTimeout(current.timer); // closed, and nothing left to stop
      current = open(now);
    }
    const w = current;
    w.running++;
    const done = (): void => {
      // The window's last lookups are over: unless more reviews may still join it, its timer has nothing to stop.
      if (--w.running === 0 && w !== current) clearTimeout(w.timer);
    };
    return { signal: w.controller.signal, done };
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function logDecision(
  logger: Logger,
  request: AdmissionRequest,
  { provider, named }: { provider: LogicalClusterName | undefined; named: Named },
  decision: Decision,
): void {
  if (decision.allowed && decision.reason !== "skip-protection" && decision.reason !== "warned") return;
  // Everything from the request, and every message built from it, is the caller's text: clipped, so a forged review
  // can neither flood nor forge the log.
  const fields = logSafe({
    uid: request.uid,
    workspace: named.annotations[CLUSTER_ANNOTATION],
    provider,
    resource: request.resource.resource,
    group: request.resource.group,
    namespace: request.namespace || undefined,
    name: named.name,
    user: request.userInfo?.username,
    dryRun: request.dryRun === true,
    reason: decision.reason,
  });
  if (decision.allowed && decision.reason === "warned") {
    logger.info(
      { ...fields, ...logSafe({ rules: decision.rules, warnings: decision.warnings }) },
      "delete allowed: Warn-mode rule",
    );
  } else if (decision.allowed) {
    logger.info(fields, "delete allowed: skip-protection annotation set");
  } else if (decision.code === 409) {
    logger.info(
      { ...fields, ...logSafe({ blockers: decision.blockers }), blockerCount: decision.blockers?.length, code: 409 },
      "delete denied: still referenced",
    );
  } else {
    logger.warn(
      { ...fields, code: decision.code, ...logSafe({ message: decision.message, detail: decision.detail }) },
      "delete denied: cannot decide",
    );
  }
}
