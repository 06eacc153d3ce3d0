// The teardown run loop: plan from what kcp says now, delete the first wave (dependents first), wait until each of
// its objects is gone (finalizers included), plan again, until nothing is left. Planning again after every wave
// picks up whatever changed underneath (new objects, references edited, something deleted by someone else). Only
// objects a dry run just allowed are deleted, so the webhook refuses a delete only when something raced in.
import type { Clock } from "../../util/clock.ts";
import type { Plan, PlanObject } from "./plan.ts";
import { mapLimit, refusalText, survey, type TeardownApi } from "./survey.ts";

export interface ExecuteOptions {
  concurrency: number;
  timeoutMs: number;
  clock: Clock;
  /** How often a wave's objects are read again while waiting for them to go. */
  pollMs?: number;
  /** A progress line (objects left, wave, rate, elapsed). */
  progress: (line: string) => void;
}

export interface Hold {
  id: string;
  finalizers: string[];
}

export interface ExecuteReport {
  ok: boolean;
  /** Deletes kcp accepted. */
  deleted: number;
  /** Real deletes the webhook refused (something referenced the object after its dry run). */
  refusedDeletes: number;
  /** Waves deleted, in order, as ids. */
  waves: string[][];
  elapsedMs: number;
  /** Why it stopped, when not ok. */
  problem?: string;
  /** The last plan, when it stopped on objects no wave reaches. */
  plan?: Plan;
  /** Objects still there when the time ran out, with the finalizers that hold them. */
  holds: Hold[];
}

class Progress {
  private lastAt = -Infinity;
  private readonly o: ExecuteOptions;
  private readonly start: number;
  constructor(o: ExecuteOptions, start: number) {
    this.o = o;
    this.start = start;
  }
  say(r: ExecuteReport, left: number, wave: number, waves: number, force = false): void {
    const now = this.o.clock.now();
    if (!force && now - this.lastAt < 5_000) return;
    this.lastAt = now;
    const secs = Math.max(0.001, (now - this.start) / 1000);
    this.o.progress(
      `wave ${wave}/${waves}: ${left} object(s) left, ${r.deleted} deleted (${(r.deleted / secs).toFixed(1)}/s), ${secs.toFixed(1)}s elapsed`,
    );
  }
}

/** Deletes one wave; a refusal that names blockers is a race (plan again), any other stops the teardown. */
async function deleteWave(api: TeardownApi, wave: readonly PlanObject[], o: ExecuteOptions, r: ExecuteReport) {
  const fresh = wave.filter((x) => !x.deleting);
  for (const x of fresh.filter((y) => y.skipProtection)) await api.skipProtection(x);
  const answers = await mapLimit(fresh, o.concurrency, (x) => api.delete(x));
  const waiting: PlanObject[] = wave.filter((x) => x.deleting);
  for (const [i, a] of answers.entries()) {
    const x = fresh[i]!;
    if (a.outcome === "allowed") {
      r.deleted++;
      waiting.push(x);
    } else if (a.outcome === "refused") {
      if (a.refusal.blockers.length > 0) r.refusedDeletes++;
      else return { waiting, problem: `${x.id}: ${refusalText(a.status, a.refusal)}` };
    }
  }
  return { waiting };
}

/** Waits until every object is gone or the deadline passes; answers what still holds the rest. */
async function waitGone(
  api: TeardownApi,
  objects: readonly PlanObject[],
  deadline: number,
  o: ExecuteOptions,
  tick: (left: number) => void,
): Promise<Hold[]> {
  let left = [...objects];
  for (;;) {
    const now = await mapLimit(left, o.concurrency, (x) => api.get(x));
    const still = left.map((x, i) => ({ x, now: now[i] })).filter((p) => p.now !== undefined);
    left = still.map((p) => p.x);
    tick(left.length);
    if (left.length === 0) return [];
    if (o.clock.now() >= deadline) return still.map((p) => ({ id: p.x.id, finalizers: p.now!.finalizers }));
    await o.clock.sleep(Math.min(o.pollMs ?? 1_000, Math.max(1, deadline - o.clock.now())));
  }
}

export async function executeTeardown(api: TeardownApi, o: ExecuteOptions): Promise<ExecuteReport> {
  const start = o.clock.now();
  const deadline = start + o.timeoutMs;
  const r: ExecuteReport = { ok: false, deleted: 0, refusedDeletes: 0, waves: [], elapsedMs: 0, holds: [] };
  const progress = new Progress(o, start);
  const done = (problem?: string): ExecuteReport => {
    r.elapsedMs = o.clock.now() - start;
    r.ok = problem === undefined;
    if (problem !== undefined) r.problem = problem;
    return r;
  };
  for (;;) {
    const objects = await api.list();
    if (objects.length === 0) return done();
    if (o.clock.now() >= deadline) return done(`timed out with ${objects.length} object(s) left`);
    const { plan } = await survey(api, objects, o.concurrency);
    const first = new Set(plan.waves[0] ?? []);
    if (first.size === 0) {
      r.plan = plan;
      return done(`${plan.stuck.length} object(s) cannot be deleted in any order`);
    }
    const waveNo = r.waves.length + 1;
    const total = r.waves.length + plan.waves.length;
    progress.say(r, objects.length, waveNo, total, true);
    const wave = objects.filter((x) => first.has(x.id));
    const { waiting, problem } = await deleteWave(api, wave, o, r);
    r.waves.push(waiting.map((x) => x.id).sort());
    if (problem !== undefined) return done(problem);
    const before = objects.length;
    r.holds = await waitGone(api, waiting, deadline, o, (left) =>
      progress.say(r, before - (waiting.length - left), waveNo, total),
    );
    if (r.holds.length > 0) return done(`timed out waiting for ${r.holds.length} object(s) of wave ${waveNo} to go`);
  }
}
