// The kcp local-targets phase of `npm run bench` (bench/lt-kcp.ts): which consumers decline the claim (the run's
// "accepting" figure is n − declining, so the split must be exact), that the phase runs only when --only names it
// (it creates 1,000 workspaces: not in the full run nor the test suite's smoke run), and what its table says.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { declines } from "../../bench/lt-kcp-world.ts";
import { localTargetsTable } from "../../bench/lt-kcp-table.ts";
import type { LocalTargetsResult } from "../../bench/lt-kcp.ts";
import { benchArgs } from "../../bench/options.ts";

function withArgv<T>(args: string[], fn: () => T): T {
  const saved = process.argv;
  process.argv = [saved[0]!, "bench/run.ts", ...args];
  try {
    return fn();
  } finally {
    process.argv = saved;
  }
}

describe("bench: local targets on kcp", () => {
  it("declines exactly `declining` of n consumers, spread over them", () => {
    for (const [n, d] of [
      [1000, 10],
      [300, 3],
      [20, 2],
      [6, 1],
      [7, 7],
      [5, 0],
    ] as const) {
      const which = Array.from({ length: n }, (_, i) => i).filter((i) => declines(i, n, d));
      assert.equal(which.length, d, `${d} of ${n}`);
      if (d > 1) assert.ok(which.at(-1)! - which[0]! >= (n / d) * (d - 1) - 1, `spread: ${which.join(",")}`);
    }
  });

  it("the full run takes it only when --only names it, the smoke run (6 workspaces) always; sizes from the flags", () => {
    const full = withArgv([], () => benchArgs());
    assert.equal(full.only.has("local-targets"), false);
    const smoke = withArgv(["--smoke"], () => benchArgs());
    assert.equal(smoke.only.has("local-targets"), true);
    assert.equal(smoke.int("lt-consumers"), 6);
    const named = withArgv(["--only=local-targets", "--lt-consumers=300"], () => benchArgs());
    assert.deepEqual([...named.only], ["local-targets"]);
    assert.equal(named.int("lt-consumers"), 300);
    assert.equal(named.int("lt-declining"), 10);
    assert.throws(() => withArgv(["--only=local-target"], () => benchArgs()), /unknown phase "local-target"/);
  });

  it("prints each step's writes and kcp's requests, the memory and the deleted export's answers", () => {
    const r: LocalTargetsResult = {
      consumers: 20,
      accepting: 18,
      setupMs: 61_000,
      loadAverage: [9.5, 8, 7],
      steps: [
        {
          step: "first pass: rule created",
          ms: 12_345,
          passes: 1,
          writes: { create: 18, update: 0, delete: 0 },
          kcp: { "LIST apibindings": 3, "POST validatingwebhookconfigurations": 18 },
          vwcs: 18,
        },
        { step: "steady pass", passes: 2, writes: { create: 0, update: 0, delete: 0 }, kcp: {}, vwcs: 18 },
      ],
      memory: [{ at: "20 consumers", controllerRssMiB: 80, webhookRssMiB: 90, webhookHeapMiB: 30 }],
      exportDeleted: {
        bindings: "404 not found",
        vwcs: "404 not found",
        passes: 3,
        readErrors: 3,
        controllerRunning: true,
        condition: "False: cannot read",
        readErrorsAfterRuleDeleted: 0,
        log: [],
      },
      errors: [],
    };
    const text = localTargetsTable(r);
    assert.match(text, /first pass: rule created\s+12\.3\s+1\s+18\/0\/0\s+3 apibindings/);
    assert.match(text, /18 validatingwebhookconfigurations \| 0 \| 0/);
    assert.match(text, /steady pass\s+2\s+0\/0\/0\s+0\s+0\s+0 \| 0 \| 0\s+18/);
    assert.match(text, /controller RSS 80\.0 MiB, webhook RSS 90\.0 MiB, heap 30\.0 MiB/);
    assert.match(text, /bindings "404 not found".*\n.*3 read errors, still running \(same pid\)/);
  });
});
