// The teardown run loop, pipelined: an object goes as soon as everything known to block it is gone, not when a whole
// wave is. One list per type a round shows what is gone, and "gone" means absent: an object being deleted
// (deletionTimestamp set, finalizers pending) is still present and still blocks what it names. No dry run: each
// ready object gets its real DELETE at once, since a DELETE the webhook refuses deletes nothing, and its refusal names
// the blockers (status.details.causes) as a dry run's would; a refused object is asked again only once those blockers
// have all gone, to catch a dependent that appeared meanwhile. Secrets and ConfigMaps (local targets) are held until
// no object of a bound type is left: a dependent is always of a bound type, so none is refused for the order. A delete refused for another reason is recorded and the
// rest goes on (liveness before ordering). What has no known order (no answer, another refusal, a cycle) goes last:
// when nothing else can move, everything left is asked afresh at once, then the objects named for skip-protection are
// annotated and deleted; what still stands is planned to say why, and the run's report lists it.
import type { Clock } from "../../../util/clock.ts";
import { planTeardown, type BlockEdge, type Obstacle, type Plan, type PlanObject } from "./plan.ts";
import { mapLimit } from "../../../util/concurrency.ts";
import type { DeleteAnswer } from "../../causes.ts";
import { askOnce, indexByKind, refusalText, resolveBlockers } from "./survey.ts";
import type { TeardownApi } from "./survey.ts";

export interface ExecuteOptions {
  concurrency: number;
  timeoutMs: number;
  clock: Clock;
  /** How often the objects are listed again while waiting for blockers and finalizers. */
  pollMs?: number;
  /** A progress line (objects left, deleting, rate, elapsed). */
  progress: (line: string) => void;
}

export interface ExecuteReport {
  ok: boolean;
  /** Deletes kcp accepted. */
  deleted: number;
  /** Real deletes refused: by the webhook (what it names waits for its blockers), or for another reason. */
  refusedDeletes: number;
  /** The deletes of each round, in order, as ids. */
  waves: string[][];
  elapsedMs: number;
  /** Why it stopped, when not ok. */
  problem?: string;
  /** The last plan, when it stopped on objects nothing reaches. */
  plan?: Plan;
  /** The objects still there at the end, as last listed (empty when ok). */
  left: PlanObject[];
  /** Per object left: the blockers its last refusal named that are still there. */
  blockedBy: Map<string, string[]>;
  /** Per object left: a delete refused for another reason than a blocker (RBAC, another webhook), as text. */
  failures: Map<string, string>;
}

/** What the run knows between rounds: each object's blockers as its last refused DELETE named them, and other refusals. */
class Known {
  /**
   * Secrets and ConfigMaps wait until no object of a bound type is left, so a protected one is never asked before the
   * dependent that names it has gone (no refused DELETE for the ordering); the final wave lifts this.
   */
  private readonly holdLocalTargets: boolean;
  constructor(holdLocalTargets = true) {
    this.holdLocalTargets = holdLocalTargets;
  }
  readonly blockers = new Map<string, BlockEdge[]>();
  readonly obstacles = new Map<string, Obstacle>();
  /** Records what a refusal names; answers a refusal that names no blocker, as text. */
  learn(o: PlanObject, a: Extract<DeleteAnswer, { outcome: "refused" }>, byKind: ReadonlyMap<string, string[]>) {
    const found = resolveBlockers(o, a.refusal, byKind);
    this.blockers.set(o.id, found.edges);
    if (found.outside.length > 0) this.obstacles.set(o.id, { outside: found.outside });
    else if (a.refusal.blockers.length === 0) this.obstacles.set(o.id, { refused: refusalText(a.status, a.refusal) });
  }
  /** A real delete refused naming no blocker: the object waits for the final wave, the refusal for the report. */
  fail(o: PlanObject, text: string, r: ExecuteReport) {
    this.obstacles.set(o.id, { refused: text });
    r.failures.set(o.id, text);
  }
  /** The blockers each object's last refusal named that `present` still holds. */
  standing(objects: readonly PlanObject[], present: ReadonlySet<string>): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const o of objects) {
      const by = (this.blockers.get(o.id) ?? []).map((e) => e.from).filter((id) => present.has(id));
      if (by.length > 0) out.set(o.id, [...new Set(by)].sort());
    }
    return out;
  }
  /**
   * Not deleting, no standing obstacle, every blocker its last refusal named is gone (absent, not Terminating), and
   * for a local target no possible dependent (`dependentsLeft`) left while held.
   */
  ready(o: PlanObject, present: ReadonlySet<string>, dependentsLeft: boolean): boolean {
    if (o.deleting || this.obstacles.has(o.id)) return false;
    if (o.localTarget && this.holdLocalTargets && dependentsLeft) return false;
    return (this.blockers.get(o.id) ?? []).every((e) => !present.has(e.from));
  }
  plan(objects: readonly PlanObject[]): Plan {
    return planTeardown(objects, [...this.blockers.values()].flat(), this.obstacles);
  }
}

interface Round {
  accepted: string[];
}

/**
 * Deletes each ready object, `concurrency` at a time (objects named for skip-protection too, without the annotation):
 * what is refused deletes nothing and waits for the blockers its refusal named.
 */
async function deleteReady(
  api: TeardownApi,
  objects: readonly PlanObject[],
  k: Known,
  o: ExecuteOptions,
  r: ExecuteReport,
) {
  const present = new Set(objects.map((x) => x.id));
  // Objects with finalizers first: their delete starts the wait their finalizers impose, which the other requests
  // then overlap; and what they block, asked later, often finds them gone and goes at its first DELETE.
  const held = (x: PlanObject): number => (x.finalizers.length > 0 ? 0 : 1);
  const dependentsLeft = objects.some((x) => !x.localTarget);
  const ready = objects.filter((x) => k.ready(x, present, dependentsLeft)).sort((a, b) => held(a) - held(b));
  const round: Round = { accepted: [] };
  const byKind = indexByKind(objects);
  const one = async (x: PlanObject): Promise<void> => {
    const a = await askOnce(() => api.delete(x), "a DELETE");
    if (a.outcome === "allowed") {
      r.deleted++;
      round.accepted.push(x.id);
    } else if (a.outcome === "refused") {
      if (a.refusal.blockers.length > 0) {
        r.refusedDeletes++;
        k.learn(x, a, byKind);
      } else k.fail(x, refusalText(a.status, a.refusal), r);
    }
  };
  await mapLimit(ready, o.concurrency, one);
  return round;
}

/**
 * The final wave: when nothing else can move, the objects the user named for skip-protection are annotated and
 * deleted (both uid-preconditioned); a delete that then fails takes the annotation off again, so protection is
 * skipped only for an object that goes.
 */
async function deleteNamed(
  api: TeardownApi,
  objects: readonly PlanObject[],
  k: Known,
  o: ExecuteOptions,
  r: ExecuteReport,
) {
  const round: Round = { accepted: [] };
  const one = async (x: PlanObject): Promise<void> => {
    if ((await api.annotate(x, true)) === "replaced")
      return k.fail(x, "not annotated: gone or replaced by another object of the same name (its uid changed)", r);
    let a: DeleteAnswer | undefined;
    try {
      a = await api.delete(x);
    } finally {
      if (a?.outcome !== "allowed" && a?.outcome !== "gone") await api.annotate(x, false);
    }
    if (a.outcome === "allowed") {
      r.deleted++;
      round.accepted.push(x.id);
    } else if (a.outcome === "refused") k.fail(x, refusalText(a.status, a.refusal), r);
  };
  await mapLimit(
    objects.filter((x) => x.named && !x.deleting && !x.skipProtection),
    o.concurrency,
    one,
  );
  return round;
}

function progressLine(r: ExecuteReport, o: ExecuteOptions, start: number, left: number, deleting: number): string {
  const secs = Math.max(0.001, (o.clock.now() - start) / 1000);
  const rate = (r.deleted / secs).toFixed(1);
  return `round ${r.waves.length + 1}: ${left} object(s) left, ${deleting} deleting, ${r.deleted} deleted (${rate}/s), ${secs.toFixed(1)}s elapsed`;
}

/** The end of a run: what is left, what still blocks each, and the failures of those still there. */
function finish(r: ExecuteReport, k: Known, objects: readonly PlanObject[], problem?: string): ExecuteReport {
  const left = new Set(objects.map((x) => x.id));
  r.ok = objects.length === 0;
  r.left = [...objects];
  r.blockedBy = k.standing(objects, left);
  for (const id of r.failures.keys()) if (!left.has(id)) r.failures.delete(id);
  if (problem !== undefined) r.problem = problem;
  return r;
}

const emptyReport = (): ExecuteReport => ({
  ok: false,
  deleted: 0,
  refusedDeletes: 0,
  waves: [],
  elapsedMs: 0,
  left: [],
  blockedBy: new Map(),
  failures: new Map(),
});

export async function executeTeardown(api: TeardownApi, o: ExecuteOptions): Promise<ExecuteReport> {
  const start = o.clock.now();
  const deadline = start + o.timeoutMs;
  const r = emptyReport();
  let k = new Known();
  const done = (objects: readonly PlanObject[], problem?: string): ExecuteReport => {
    r.elapsedMs = o.clock.now() - start;
    return finish(r, k, objects, problem);
  };
  let lastSaid = -Infinity;
  let rechecked = false;
  for (;;) {
    const objects = await api.list();
    if (objects.length === 0) return done(objects);
    const deleting = objects.filter((x) => x.deleting);
    if (o.clock.now() - lastSaid >= 5_000) {
      lastSaid = o.clock.now();
      o.progress(progressLine(r, o, start, objects.length, deleting.length));
    }
    if (o.clock.now() >= deadline) {
      if (deleting.length > 0) return done(objects, `timed out waiting for ${deleting.length} object(s) to go`);
      return done(objects, `timed out with ${objects.length} object(s) left`);
    }
    const round = await deleteReady(api, objects, k, o, r);
    if (round.accepted.length > 0) r.waves.push(round.accepted.sort());
    if (round.accepted.length > 0 || deleting.length > 0) rechecked = false;
    else if (!rechecked) {
      // Nothing moves: the final wave. Forget what the refusals said and ask about everything left at once, whatever
      // its order (a DELETE that had no answer twice, a delete refused for another reason get their second try here).
      rechecked = true;
      k = new Known(false);
      r.failures.clear(); // what the final wave answers now is what the report tells
      continue;
    } else {
      const last = await deleteNamed(api, objects, k, o, r);
      if (last.accepted.length > 0) {
        r.waves.push(last.accepted.sort());
        rechecked = false;
        continue;
      }
      r.plan = k.plan(objects);
      return done(objects, `${objects.length} object(s) cannot be deleted`);
    }
    // Deletes just accepted without finalizers are gone already: list again at once; else wait for what holds.
    if (round.accepted.length === 0)
      await o.clock.sleep(Math.min(o.pollMs ?? 1_000, Math.max(1, deadline - o.clock.now())));
  }
}
