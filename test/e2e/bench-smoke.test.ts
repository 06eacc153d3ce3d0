// The benchmark in smoke mode (tiny sizes) as part of the test command, so it never rots. It asserts that the run
// completes, prints every table and writes a JSON report of the expected shape — never a timing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { HEADINGS } from "../../bench/report.ts";
import type { BenchReport } from "../../bench/results.ts";
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
    // By default the bench measures what the image ships: the compiled JavaScript, built by the run itself.
    assert.ok(
      report.notes.some((n) => n.startsWith("binaries: the compiled JavaScript")),
      report.notes.join("\n"),
    );
    assert.match(run.stderr, /compiling src\/ to dist\//);

    assert.deepEqual(report.lookupModes, ["index", "live"]);

    // Smoke sizes, in each lookup mode: N = 0 and 20, 4 allowed DELETEs per on/off, 2 denied, 4 bare LISTs, 2 of each
    // right after a write.
    assert.deepEqual(
      report.latency?.map((l) => [l.n, l.mode]),
      [
        [0, "index"],
        [0, "live"],
        [20, "index"],
        [20, "live"],
      ],
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
    assert.equal(report.latency?.filter((l) => l.pageSizeProbe).length, 1, "one page-size probe, at N=20");
    for (const mode of ["index", "live"])
      assert.ok(
        run.stdout.includes(`${HEADINGS.latency} — lookup=${mode}`),
        `stdout has the latency table of lookup=${mode}`,
      );

    assert.deepEqual(report.teardown?.map((t) => [t.n, t.mode, t.protected]).sort(), [
      [10, "index", false],
      [10, "index", true],
      [10, "live", false],
      [10, "live", true],
    ]);
    for (const t of report.teardown ?? []) {
      assert.equal(t.error, undefined);
      const calls = t.webhookCalls.allowed + t.webhookCalls.denied + t.webhookCalls.errored;
      if (t.protected) assert.ok(calls >= 10, `each of the 10 VPC deletes went through the webhook (${calls} calls)`);
      else assert.equal(calls, 0, "no webhook calls without the rule");
    }

    // Teardown with a slow backend (smoke: 5 pairs whose VMs hold a 1 s finalizer, the namespace rows): the watch saw
    // every deletion, the backend cleared every finalizer, and with protection no VPC went before a VM naming it.
    assert.deepEqual(
      report.finalizerTeardown?.map((r) => [r.scope, r.strategy, r.pairs]),
      [
        ["namespace", "kcp", 5],
        ["namespace", "kcp-protected", 5],
        ["namespace", "teardown-protected", 5],
      ],
    );
    for (const r of report.finalizerTeardown ?? []) {
      assert.equal(r.error, undefined);
      assert.deepEqual([r.ordering.objects, r.ordering.unobserved, r.finalizersCleared], [10, 0, 5]);
      if (r.strategy !== "kcp")
        assert.equal(r.ordering.violations, 0, `${r.strategy}: ${r.ordering.examples.join(", ")}`);
    }
    assert.equal(typeof report.finalizerTeardown?.[2]?.planMs, "number");

    // Index delay: 3 quiet samples per mode, and at least one in index mode during a 10-pair teardown.
    assert.deepEqual(
      report.delay?.map((d) => [d.mode, d.load]),
      [
        ["index", "quiet"],
        ["live", "quiet"],
        ["index", "teardown"],
      ],
    );
    for (const d of report.delay ?? []) {
      assert.deepEqual(d.errors, []);
      assert.ok(d.samples.length >= (d.load === "quiet" ? 3 : 1), `${d.mode} ${d.load}: ${d.samples.length} samples`);
      for (const s of d.samples) assert.ok(s.polls >= 1 && s.delayMs >= 0 && s.rttMs > 0);
    }

    assert.deepEqual(
      report.rule?.map((r) => [r.mode, r.trials.length, r.errors]),
      [
        ["index", 2, []],
        ["live", 2, []],
      ],
    );

    // Idle in each mode, after the N=20 lookups in each mode, then with 5 rules loaded.
    assert.deepEqual(
      report.memory?.map((m) => m.rulesLoaded),
      [1, 1, 1, 1, 5],
    );
    assert.deepEqual(
      report.memory?.slice(0, 2).map((m) => m.lookup),
      ["index", "live"],
    );
    for (const m of report.memory ?? []) assert.ok((m.webhook?.rssMiB ?? 0) > 0 && (m.controller?.rssMiB ?? 0) > 0);

    // Index memory: 3 workspaces × 20 VMs, indexed (the check VPC was denied), RSS read before and after.
    const im = report.indexMemory;
    assert.ok(im, "the index-memory phase ran");
    assert.deepEqual([im.workspaces, im.perWorkspace, im.dependents, im.errors], [3, 20, 60, []]);
    assert.ok(im.without.rssMiB > 0 && im.with.rssMiB > 0 && Number.isFinite(im.indexedAfterMs));
    assert.equal(typeof im.bytesPerDependent, "number");
    assert.ok(im.indexGauge, "the webhook exports dependency_webhook_index_dependents");
    assert.ok(im.indexGauge.after - im.indexGauge.before >= 61, `index grew by ${JSON.stringify(im.indexGauge)}`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
