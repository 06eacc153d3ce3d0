// What checking a history finds, and what every invariant's check is handed.
import type { History } from "../history.ts";
import type { Timeline } from "./timeline.ts";

/** How a delete was refused without a verdict on its dependents (refusals.ts says which answer is which). */
export type RefusalKind = "unavailable" | "webhook failure" | "lookup failed" | "no answer";

export type Invariant = "I1" | "I2" | "I3" | "I4" | "I5" | "I6";

export interface Violation {
  invariant: Invariant;
  message: string;
  at: number;
}

export interface Race {
  invariant: Invariant;
  message: string;
}

export interface CheckResult {
  violations: Violation[];
  races: Race[];
  /** Dependencies deleted by a workspace deletion (not judged by I1). */
  deletedWithWorkspace: number;
  checkedDeletes: number;
  checkedDenials: number;
  /** Protected deletes answered while the webhook was down (what I4 judged). */
  checkedWhileDown: number;
  /** Deletes answered (not 404) while the careless rule stood and no other fault excused a 503 (what I5 judged). */
  checkedCollateral: number;
  /** Deletes answered 503 (each judged by I5). */
  refusedUnavailable: number;
  /** Deletes refused without a verdict, by how (refusals.ts; each judged by I5). */
  refused: Record<RefusalKind, number>;
  /** Refusals excused as the hostile consumer's documented answer (its own workspace, the types it overloaded). */
  excusedHostile: number;
  /** Deletes answered (not 404) while a hostile episode was under way and no fault excused a refusal (I5 judged). */
  checkedHostile: number;
  /** Of those, while slow uploads held connections to the replicas. */
  checkedSlowUploads: number;
  /** Of those, while the hostile provider's forged status or slice stood (or it kept trying to forge the status). */
  checkedProvider: number;
  /** Deletes of a local target in a consumer that declined its claim (what consent.ts judged: none may be refused). */
  checkedDeclined: number;
  /** Per rule, the share of the run it was Ready (I1 only holds a Ready rule to its word). */
  readyShare: Record<string, number>;
}

/** One check's inputs and the result it adds to. */
export interface Judging {
  h: History;
  tl: Timeline;
  out: CheckResult;
  /** A logical cluster's workspace path, for messages. */
  ws: (cluster: string) => string;
}
