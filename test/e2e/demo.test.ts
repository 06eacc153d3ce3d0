// The README's first command: the demo's walkthrough, run as a user runs it (through hack/demo.sh's entry point).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { REPO_ROOT, kcpBinDir } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";

function runDemo(args: string[]): {
  output: () => string;
  exited: Promise<number | null>;
  kill: (s: NodeJS.Signals) => void;
} {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, "hack/demo.ts"), ...args], {
    env: { ...process.env, KCP_BIN_DIR: kcpBinDir() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  return {
    output: () => out,
    exited: new Promise((resolve) => child.on("exit", (code) => resolve(code))),
    kill: (s) => child.kill(s),
  };
}

const rootDirOf = (out: string): string => /root directory (\S+)\)/.exec(out)?.[1] ?? "";

test("the demo shows a VPC delete blocked, then allowed, and exits with --exit", async () => {
  const demo = runDemo(["--exit"]);
  const code = await demo.exited;
  const out = demo.output();
  assert.equal(code, 0, out);
  assert.match(
    out,
    /\$ kubectl --context=consumer1 delete vpc my-vpc\n\s+Error from server \(Conflict\): admission webhook "dependency-controller\.dependencies\.opendefense\.cloud" denied the request: cannot delete vpcs\/my-vpc: still referenced by VirtualMachine\/my-vm/,
  );
  assert.match(
    out,
    /virtualmachine\.compute\.test\.io "my-vm" deleted\n.*\n\s+vpc\.network\.test\.io "my-vpc" deleted/,
  );
  // Step 4 shows the rule as a user sees it after `kubectl wait --for=condition=Ready`: READY and DEPENDENCIES
  // filled in (the table's ENFORCEMENT cell is empty: the rule leaves spec.enforcement unset).
  assert.match(
    out,
    /wait --for=condition=Ready dependencyrule\/vm-dependencies\n\s+dependencyrule\.dependencies\.opendefense\.cloud\/vm-dependencies condition met\n/,
  );
  assert.match(
    out,
    /NAME\s+DEPENDENT\s+ENFORCEMENT\s+DEPENDENCIES\s+READY\s+AGE\n\s+vm-dependencies\s+VirtualMachine\s+(?:\S+\s+)?\d+\s+True\s+\d+s\n/,
  );
  assert.match(out, /Done: the delete was blocked/);
  const rootDir = rootDirOf(out);
  assert.ok(rootDir, "the demo names its directory");
  assert.equal(existsSync(rootDir), false, "the demo cleaned up its kcp directory");
});

test("without --exit the demo keeps running with kubectl hints until Ctrl-C, then cleans up", async () => {
  const demo = runDemo([]);
  await waitFor("the demo to wait for Ctrl-C", async () => /Press Ctrl-C/.test(demo.output()) || undefined, {
    timeoutMs: 240_000,
    intervalMs: 500,
  });
  const out = demo.output();
  assert.match(out, /export KUBECONFIG=\S+demo\.kubeconfig/);
  const rootDir = rootDirOf(out);
  assert.ok(existsSync(rootDir), "kcp is still there while the demo waits");
  // The hints work as printed: paste them, up to the plugin's line, into a shell.
  const hints = /\n(export KUBECONFIG=[\s\S]*?kubectl-dependencies why vpc\/other-vpc[^\n]*)\n/.exec(out)?.[1];
  assert.ok(hints, `the hints name the plugin:\n${out}`);
  const shell = spawnSync("bash", ["-c", hints], { encoding: "utf8", env: { ...process.env } });
  assert.equal(
    shell.status,
    1,
    `the plugin says the delete would be refused (exit 1):\n${shell.stdout}${shell.stderr}`,
  );
  assert.match(shell.stdout, /other-vm/);
  demo.kill("SIGINT");
  assert.equal(await demo.exited, 0);
  assert.equal(existsSync(rootDir), false, "Ctrl-C cleaned up the kcp directory");
});
