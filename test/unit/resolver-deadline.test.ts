// The rule admission check's deadline, on a fake clock: a check kcp is slow to answer is decided by us before kcp's
// 5 s timeout (which, with failurePolicy Ignore, would store the rule unchecked without a word).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ExportFacts } from "../../src/api/references.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import type { AdmissionRequest, Decision } from "../../src/webhook/admission.ts";
import { RULE_CHECK_DEADLINE_MS, startDeadline } from "../../src/webhook/rules/deadline.ts";
import { admitRule } from "../../src/webhook/rules/rule-admission.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { ruleObject, type DepSpec } from "./helpers-rules.ts";

const served = (group: string, resource: string, kind: string): ExportFacts => ({
  found: true,
  resources: [{ group, name: resource, schema: `v1.${resource}` }],
  schemas: new Map([[`v1.${resource}`, { kind, versions: [{ name: "v1", served: true }] }]]),
});
const COMPUTE = served("compute.test.io", "virtualmachines", "VirtualMachine");
const NETWORK = served("network.test.io", "vpcs", "VPC");

function request(deps: DepSpec[]): AdmissionRequest {
  return {
    uid: "u",
    operation: "CREATE",
    resource: { group: "dependencies.opendefense.cloud", version: "v1alpha1", resource: "dependencyrules" },
    name: "vm",
    object: ruleObject("compute", "vm", { resource: "virtualmachines" }, deps),
  };
}

/** A promise the test settles by hand, standing for a kcp answer still on its way. */
function pending<T>(): { promise: Promise<T>; settle: (v: T) => void } {
  let settle: (v: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (settle = r));
  return { promise, settle };
}

describe("rule admission deadline", () => {
  it("is well under kcp's 5 s, with the review queue's 2 s before it", () => {
    assert.ok(RULE_CHECK_DEADLINE_MS + 2_000 < 5_000);
  });

  it("allows with a warning naming what kcp did not answer in time, and refuses nothing it did not check", async () => {
    const clock = new FakeClock();
    const slowPath = pending<Resolution>();
    let decided: Decision | undefined;
    void admitRule(
      request([
        { resource: "vpcs", path: "root:slow" },
        { resource: "vpcs", path: "root:fast" },
      ]),
      {
        clock,
        fetchExport: (cluster) => Promise.resolve(cluster === "compute" ? COMPUTE : NETWORK),
        resolve: (path) =>
          path === "root:slow" ? slowPath.promise : Promise.resolve({ ok: true, cluster: logicalClusterName("net") }),
      },
    ).then((d) => (decided = d));
    await clock.advance(RULE_CHECK_DEADLINE_MS - 1);
    assert.equal(decided, undefined, "decided before the deadline");
    await clock.advance(1);
    // Said like anything else about another workspace: a slow answer must not tell an existing one from a missing one.
    assert.deepEqual(decided, {
      allowed: true,
      reason: "rule-unverified",
      warnings: [
        "spec.dependencies[0]: workspace root:slow not found or not readable by dep-ctrl, or its APIExport " +
          "network.test.io does not serve vpcs.network.test.io at v1 (which one is said only about the rule's own " +
          "workspace); the controller checks the rule again",
      ],
    });
    slowPath.settle({ ok: true, cluster: logicalClusterName("net") }); // a late answer changes nothing
  });

  it("still refuses what it found definitely wrong in the rule's own workspace before the deadline", async () => {
    const clock = new FakeClock();
    let decided: Decision | undefined;
    void admitRule(
      request([
        { resource: "vpcs", path: "root:slow" },
        { resource: "subnets", path: "root:fast" },
      ]),
      {
        clock,
        fetchExport: (cluster) => Promise.resolve(cluster === "compute" ? COMPUTE : NETWORK),
        // root:fast is the rule's own workspace ("compute"), which does not export subnets.
        resolve: (path) =>
          path === "root:slow"
            ? pending<Resolution>().promise
            : Promise.resolve({ ok: true, cluster: logicalClusterName("compute") }),
      },
    ).then((d) => (decided = d));
    await clock.advance(RULE_CHECK_DEADLINE_MS);
    assert.equal(decided?.allowed, false);
    assert.match(decided && !decided.allowed ? decided.message : "", /does not export subnets\.network\.test\.io/);
  });

  it("answers with the work's value, or the late value once the deadline passed, and never throws late", async () => {
    const clock = new FakeClock();
    const d = startDeadline(clock, 100);
    const early = d.within(Promise.resolve("done"), () => "late");
    const stuck = pending<string>();
    const slow = d.within(stuck.promise, () => "late");
    const failing = assert.rejects(
      d.within(Promise.reject(new Error("boom")), () => "late"),
      /boom/,
    );
    await clock.advance(100);
    assert.equal(await early, "done");
    assert.equal(await slow, "late");
    await failing;
    assert.equal(await d.within(new Promise<string>(() => undefined), () => "late"), "late");
  });
});
