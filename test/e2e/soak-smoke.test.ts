// The soak in its smoke size (tools/soak/, `npm run soak` for the long run): a fixed seed, four workers, faults every
// 8–15 s, rule churn and a workspace deletion on a two-shard kcp with two webhook replicas behind one address; it
// fails on any violation of I1–I4. Then the same checker against a deliberately weakened build (the webhook address
// answers "allowed" to every review): I1 must fire, or the checker proves nothing.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { SoakEnv } from "../../tools/soak/env.ts";
import { summary } from "../../tools/soak/report.ts";
import { runSoak, type SoakOptions } from "../../tools/soak/soak.ts";

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
  deleteWorkspace: true,
  weakened: false,
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

test("soak smoke: 0 violations of I1–I4 under load, faults and churn (fixed seed)", { timeout: 600_000 }, async () => {
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
  assert.deepEqual(
    result.violations.map((v) => `${v.invariant}: ${v.message}`),
    [],
  );
});

test(
  "soak: the checker catches a weakened build that allows every DELETE (I1 fires)",
  { timeout: 600_000 },
  async () => {
    const { history, result } = await runSoak(must(), {
      ...base,
      seed: SEED + 1,
      durationMs: 45_000,
      faults: false,
      deleteWorkspace: false,
      weakened: true,
    });
    log(summary(history, result));
    const i1 = result.violations.filter((v) => v.invariant === "I1");
    assert.ok(i1.length > 0, "I1 did not fire although every delete was allowed");
    assert.match(i1[0]?.message ?? "", /referenced it at \.spec\./);
  },
);
