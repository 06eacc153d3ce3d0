// The latency phase of `npm run bench` refuses, before it creates any VM, an N that the webhook's default index
// budget would answer with 503 in index mode (issue 30: 100,000 VMs in one workspace), unless --webhook-arg raises
// it; and the flag reaches the run's options.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BenchEnv } from "../../bench/env.ts";
import { checkIndexBudget } from "../../bench/latency-setup.ts";
import { benchArgs } from "../../bench/options.ts";
import type { LookupMode } from "../../tools/kcp/topology.ts";

const env = (webhookArgs: string[]) => ({ bins: { webhookArgs } }) as unknown as BenchEnv;
const check =
  (ns: number[], modes: LookupMode[], webhookArgs: string[] = []) =>
  () =>
    checkIndexBudget(env(webhookArgs), { ns, modes });

describe("bench latency: the index budget check", () => {
  it("refuses 100,000 VMs in one workspace in index mode with the default budget, naming the flags to raise it", () => {
    assert.throws(
      check([0, 10_000, 100_000], ["index"]),
      /100002 VMs in one workspace.*--index-max-objects-per-workspace/,
    );
    assert.throws(check([19_999], ["index", "live"]), /20001 VMs/); // the probe's VM and zz-held-vm count too
  });

  it("lets through what the default budget holds, live mode alone, and a raised budget", () => {
    check([0, 10_000, 19_998], ["index"])();
    check([100_000], ["live"])();
    check([100_000], ["index"], ["--index-max-objects-per-workspace=200000"])();
  });

  it("--webhook-arg is repeatable and makes the run custom", () => {
    const saved = process.argv;
    process.argv = [saved[0]!, "bench/run.ts", "--webhook-arg=--a=1", "--webhook-arg=--b=2"];
    try {
      const { values, custom } = benchArgs();
      assert.deepEqual(values["webhook-arg"], ["--a=1", "--b=2"]);
      assert.equal(custom, true);
    } finally {
      process.argv = saved;
    }
  });
});
