// The harness leaves nothing behind: after a failing test and after Ctrl-C, no kcp process it started is alive
// and its temp directory is gone.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { REPO_ROOT, kcpBinDir } from "../../tools/kcp/harness.ts";
import { pidAlive, waitFor } from "../../tools/kcp/process.ts";

async function runFixture(
  interrupt: boolean,
): Promise<{ code: number | null; output: string; pid: number; rootDir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "harness-cleanup-"));
  const record = path.join(dir, "record.json");
  // NODE_TEST_CONTEXT would make the nested runner talk to ours instead of running its file.
  const { NODE_TEST_CONTEXT: _ignored, ...parentEnv } = process.env;
  const child = spawn(
    process.execPath,
    ["--test", "--test-reporter=tap", path.join(REPO_ROOT, "test/integration/fixtures/failing-suite.ts")],
    {
      env: {
        ...parentEnv,
        KCP_BIN_DIR: kcpBinDir(),
        HARNESS_RECORD_FILE: record,
        ...(interrupt ? { HARNESS_WAIT_FOR_SIGNAL: "1" } : {}),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const rec = await waitFor(
    "the fixture to record its kcp",
    async () =>
      existsSync(record) ? (JSON.parse(readFileSync(record, "utf8")) as { pid: number; rootDir: string }) : undefined,
    { timeoutMs: 180_000 },
  );
  if (interrupt) {
    assert.ok(pidAlive(rec.pid), "kcp runs while the suite waits");
    child.kill("SIGINT");
  }
  const code = await exited;
  rmSync(dir, { recursive: true, force: true });
  return { code, output, ...rec };
}

test("a failing test stops kcp, removes its directory and prints the log tail", async () => {
  const r = await runFixture(false);
  assert.notEqual(r.code, 0, "the fixture suite fails");
  assert.match(r.output, /this failure is intended/);
  assert.match(r.output, /--- kcp logs \(/);
  await waitFor("kcp to be gone", async () => !pidAlive(r.pid) || undefined, { timeoutMs: 20_000 });
  assert.equal(existsSync(r.rootDir), false, `root dir ${r.rootDir} removed`);
});

test("Ctrl-C stops kcp and removes its directory", async () => {
  const r = await runFixture(true);
  await waitFor("kcp to be gone", async () => !pidAlive(r.pid) || undefined, { timeoutMs: 20_000 });
  assert.equal(existsSync(r.rootDir), false, `root dir ${r.rootDir} removed`);
});
