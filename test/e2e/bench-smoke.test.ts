// The benchmark in smoke mode (tiny sizes) as part of the test command, so it never rots. It asserts that the run
// completes, prints every table and writes a JSON report of the expected shape — never a timing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { HEADINGS, type BenchReport } from "../../bench/report.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBench(args: string[]): Promise<Run> {
  const env = { ...process.env };
  delete env["NODE_TEST_CONTEXT"]; // the child is a program, not a test file reporting to this runner
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, "bench/run.ts"), ...args], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

const isNumberArray = (v: unknown, length: number): boolean =>
  Array.isArray(v) && v.length === length && v.every((x) => typeof x === "number");

test("npm run bench -- --smoke runs end to end, prints every table and writes the JSON report", async () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "bench-smoke-"));
  try {
    const run = await runBench(["--smoke", `--out=${out}`]);
    assert.equal(run.code, 0, `bench exited with ${run.code}\n--- stderr ---\n${run.stderr.slice(-4000)}`);
    for (const heading of Object.values(HEADINGS)) assert.ok(run.stdout.includes(heading), `stdout lacks "${heading}"`);

    const files = readdirSync(out).filter((f) => f.endsWith(".json"));
    assert.equal(files.length, 1, `one JSON report in ${out}`);
    const report = JSON.parse(readFileSync(path.join(out, files[0] ?? ""), "utf8")) as BenchReport;
    assert.equal(report.mode, "smoke");
    assert.ok(!Number.isNaN(Date.parse(report.date)));
    assert.ok(report.machine.cores > 0);
    assert.match(report.machine.node, /^v\d+\./);
    assert.match(report.machine.kcp, /kcp-v0\.30\.0/);
    assert.ok(report.notes.length > 0);

    // Smoke sizes: N = 0 and 20, 4 allowed DELETEs per mode, 2 denied, 4 bare LISTs, 2 of each right after a write.
    assert.deepEqual(
      report.latency?.map((l) => l.n),
      [0, 20],
    );
    for (const l of report.latency ?? []) {
      assert.deepEqual(l.errors, []);
      assert.equal(l.vmsListed, l.n + 1);
      assert.ok(isNumberArray(l.samplesMs.protectedAllowed, 4));
      assert.ok(isNumberArray(l.samplesMs.unprotected, 4));
      assert.ok(isNumberArray(l.samplesMs.protectedDenied, 2));
      assert.ok(isNumberArray(l.samplesMs.bareList, 4));
      assert.ok(isNumberArray(l.samplesMs.afterWriteDelete, 2));
      assert.ok(isNumberArray(l.samplesMs.afterWriteList, 2));
      assert.equal(l.webhook.allowed.count, 4, "every protected allowed DELETE reached the webhook");
      assert.equal(l.webhook.denied.count, 2, "every denied DELETE was denied by the webhook");
      assert.equal(l.webhook.afterWrite.count, 2);
      assert.equal(typeof l.ratios.allowedOverUnprotected.p50, "number");
    }

    assert.deepEqual(report.teardown?.map((t) => [t.n, t.protected]).sort(), [
      [10, false],
      [10, true],
    ]);
    for (const t of report.teardown ?? []) {
      assert.equal(t.error, undefined);
      const calls = t.webhookCalls.allowed + t.webhookCalls.denied + t.webhookCalls.errored;
      if (t.protected) assert.ok(calls >= 10, `each of the 10 VPC deletes went through the webhook (${calls} calls)`);
      else assert.equal(calls, 0, "no webhook calls without the rule");
    }

    assert.equal(report.rule?.trials.length, 2);
    assert.deepEqual(report.rule?.errors, []);

    assert.deepEqual(
      report.memory?.map((m) => m.rulesLoaded),
      [1, 1, 5],
    );
    for (const m of report.memory ?? []) assert.ok((m.webhook?.rssMiB ?? 0) > 0 && (m.controller?.rssMiB ?? 0) > 0);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
