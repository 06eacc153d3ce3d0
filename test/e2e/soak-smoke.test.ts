// The soak in its smoke size (tools/soak/, `npm run soak` for the long run): a fixed seed, four workers, faults every
// 8–15 s, rule churn, a workspace deletion, the careless author, the hostile consumer, the hostile provider (its
// status forgeries all refused 403, its slice rewrites taken, its listener never connected to) and Secrets protected by
// a local-target rule where the consumer accepted its claim (denied there, through where it declined) on a two-shard kcp with
// two webhook replicas behind one address; it fails on any violation of I1–I6. A short run with only the careless author
// and the hostile consumer (no other fault, no rule churn inside it) makes I5 judge deletes while the faulty rule
// stands, while the hostile consumer's dependents are over the index's names cap and budget, and while slow uploads
// hold connections to both replicas: its own 503s must show up where documented, and nobody else may be refused.
// Then the same checker against a deliberately weakened build (the webhook address answers "allowed" to every review
// but every third, refused with 503, and every tenth, held past kcp's timeout): I1 and I5 must fire, or the checker
// proves nothing.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { SoakEnv } from "../../tools/soak/env.ts";
import { summary } from "../../tools/soak/report.ts";
import type { History } from "../../tools/soak/history.ts";
import { runSoak, type SoakOptions } from "../../tools/soak/soak.ts";
import type { CheckResult } from "../../tools/soak/checker.ts";

const SEED = 20261122;
let env: SoakEnv | undefined;
const log = (line: string): void => void process.stderr.write(`[soak] ${line}\n`);

const base: SoakOptions = {
  seed: SEED,
  durationMs: 75_000,
  workers: 4,
  windowMs: 5000,
  boundMs: 120_000,
  faultEveryMs: [8000, 15_000],
  ruleChurnEveryMs: [10_000, 20_000],
  faults: true,
  careless: true,
  carelessEveryMs: [8000, 15_000],
  hostile: true,
  hostileEveryMs: [5000, 15_000],
  hostileHoldMs: [10_000, 15_000],
  deleteWorkspace: true,
  hostileProvider: true,
  statusPolicy: true,
  weakened: false,
  weakenedStatus: false,
  lookup: "index",
  log,
};

before(async () => {
  env = await SoakEnv.start(log, base.lookup);
});

after(async () => {
  await env?.stop();
});

function must(): SoakEnv {
  if (!env) throw new Error("the soak environment did not start (see the before hook's error)");
  return env;
}

test("soak smoke: 0 violations of I1–I5 under load, faults and churn (fixed seed)", { timeout: 600_000 }, async () => {
  const { history, result } = await runSoak(must(), base);
  const text = summary(history, result);
  log(text);
  if (result.violations.length > 0) {
    const file = path.join(os.tmpdir(), `soak-history-${SEED}.json`);
    writeFileSync(file, JSON.stringify(history));
    log(`history: ${file}\n${must().logTails()}`);
  }
  assert.ok(history.faults.length > 0, "the smoke run injected no fault");
  assert.ok(result.checkedDeletes > 0, "the smoke run checked no dependency delete");
  providerRefused(history);
  localTargetsExercised(history, result);
  assert.deepEqual(
    result.violations.map((v) => `${v.invariant}: ${v.message}`),
    [],
  );
});

test(
  "soak: a careless author's faulty rule and a hostile consumer refuse nobody else (I5 judged with no other fault)",
  { timeout: 300_000 },
  async () => {
    const { history, result } = await runSoak(must(), {
      ...base,
      seed: SEED + 2,
      durationMs: 30_000,
      faults: false,
      deleteWorkspace: false,
      ruleChurnEveryMs: [600_000, 600_000],
      carelessEveryMs: [1000, 3000],
      hostileEveryMs: [1000, 3000],
      hostileHoldMs: [10_000, 12_000],
    });
    log(summary(history, result));
    assert.ok(
      history.faults.some((f) => f.kind === "careless-rule"),
      "the careless rule never stood",
    );
    assert.ok(result.checkedCollateral > 0, "no delete was answered while the careless rule stood");
    const episodes = history.hostile ?? [];
    assert.ok(
      episodes.some((e) => e.kind === "slow-uploads"),
      "no slow-upload episode ran",
    );
    assert.ok(
      episodes.some((e) => e.kind === "dependents" && e.overloaded.length === 2),
      "no dependents episode put both types over the index's names cap and budget",
    );
    assert.ok(result.checkedSlowUploads > 0, "no genuine delete was answered during slow uploads");
    assert.ok(result.checkedProvider > 0, "no delete was answered while the hostile provider attacked");
    // The first dependents episode crosses both limits: its own deletes there get the documented 503.
    assert.ok(result.excusedHostile > 0, "the hostile consumer's own deletes were never refused 503");
    assert.deepEqual(
      result.violations.map((v) => `${v.invariant}: ${v.message}`),
      [],
    );
  },
);

/**
 * The local-target rule's Secrets were deleted where the consumer accepted its claim (I1 judged them) and where it
 * declined (some went through, and none reached the webhook: I5 would have said).
 */
function localTargetsExercised(history: History, result: CheckResult): void {
  const consent = history.localTargets?.[0];
  assert.ok(consent && consent.declined.length > 0, "no consumer declined the vault export's claim");
  const deletes = (clusters: string[]) =>
    history.ops.filter((op) => op.kind === "delete" && op.resource === "secrets" && clusters.includes(op.cluster));
  // (Setup already required a denial in each accepting consumer; with these pools a run may see none of its own.)
  assert.ok(deletes(consent.accepted).length > 0, "no Secret delete where the claim was accepted");
  assert.ok(
    deletes(consent.declined).some((op) => op.status === 200),
    "no Secret delete went through where the claim was declined",
  );
  assert.ok(result.checkedDeclined > 0, "the checker judged no delete where the claim was declined");
}

/**
 * The hostile provider forged its rule's status and rewrote its slice: kcp refused every status write (the maximal
 * permission policy is on), took the slice rewrites, and its listener saw no connection (I6 judges that too).
 */
function providerRefused(history: History): void {
  const episodes = (history.hostile ?? []).filter((e) => e.kind === "provider");
  assert.ok(episodes.length >= 2, `the hostile provider ran ${episodes.length} episodes, not a status and a slice one`);
  const forged = history.ops.filter((op) => op.kind === "forge-status");
  assert.ok(forged.length > 0, "the hostile provider never tried to forge its rule's status");
  assert.deepEqual(
    forged.filter((op) => op.status !== 403).map((op) => `${op.status} ${op.message}`),
    [],
    "a status forgery was not refused 403",
  );
  assert.ok(
    history.ops.some((op) => op.kind === "forge-slice" && op.status === 200),
    "the hostile provider never rewrote its slice",
  );
  assert.equal(history.tenantConnections, 0, "a binary connected to the hostile provider's listener");
}

test(
  "soak: the checker catches a weakened build that allows deletes (I1 fires) and refuses others with 503 (I5 fires)",
  { timeout: 600_000 },
  async () => {
    const { history, result } = await runSoak(must(), {
      ...base,
      seed: SEED + 1,
      durationMs: 45_000,
      faults: false,
      deleteWorkspace: false,
      // No churn: a change to the soak's own rule would excuse the build's 503s for I3's bound.
      ruleChurnEveryMs: [600_000, 600_000],
      weakened: true,
    });
    log(summary(history, result));
    const i1 = result.violations.filter((v) => v.invariant === "I1");
    assert.ok(i1.length > 0, "I1 did not fire although every delete was allowed");
    assert.match(i1[0]?.message ?? "", /referenced it at \.spec\./);
    const i5 = result.violations.filter((v) => v.invariant === "I5");
    assert.ok(i5.length > 0, "I5 did not fire although every third delete was refused with 503");
    // A review held past kcp's timeout is how a starved review pool would look: kcp refuses the delete itself.
    assert.ok(
      i5.some((v) => /refused \(webhook failure/.test(v.message)),
      `I5 did not fire on a delete kcp refused for want of the webhook's answer: ${i5.map((v) => v.message).join("; ")}`,
    );
  },
);
