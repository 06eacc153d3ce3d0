// A webhook replica that restarts while workspace reads fail transiently keeps protecting: the last good resolution
// of the rule's provider path and the controller's verdict on the rule live in the dep-ctrl workspace
// (src/api/verdicts.ts), not in the old process. Real modules throughout (WorkspaceResolver, RuleSource, the
// decision); only kcp's answers are scripted.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/kcp/answers.ts";
import { WorkspaceResolver } from "../../src/kcp/workspaces.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { DependencyRule } from "../../src/api/types.ts";
import { NO_VERDICTS, type Verdicts } from "../../src/api/verdicts.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import type { AdmissionRequest, LookupResult } from "../../src/webhook/admission.ts";
import { decide, planLookups } from "../../src/webhook/deletion/decision.ts";
import { RuleSource, type RuleWatch } from "../../src/webhook/rules/source.ts";
import { FakeClock } from "../support/fake-clock.ts";

const RULE = {
  metadata: { name: "vm-deps", uid: "u-1", generation: 1, annotations: { "kcp.io/cluster": "compute" } },
  spec: {
    dependent: { apiExportName: "compute.io", group: "compute.io", version: "v1", kind: "VM", resource: "vms" },
    dependencies: [
      {
        apiExportRef: { path: "root:network", name: "network.io" },
        group: "network.io",
        version: "v1",
        resource: "vpcs",
        fieldRef: { path: ".spec.vpc" },
      },
    ],
  },
} as unknown as DependencyRule;

const NET = logicalClusterName("net1");
const VPCS = { group: "network.io", resource: "vpcs" };

/** What the controller stored after it saw the rule protect: the path's cluster and DependentsIndexed=Indexed. */
const STORED: Verdicts = {
  rules: new Map([
    [
      "compute/vm-deps",
      {
        uid: "u-1",
        generation: 1,
        conditions: { DependentsIndexed: { status: "True", reason: "Indexed", since: "2026-01-01T00:00:00Z" } },
      },
    ],
  ]),
  paths: new Map([["root:network", NET]]),
};

const DELETE: AdmissionRequest = {
  uid: "r1",
  operation: "DELETE",
  resource: { group: "network.io", version: "v1", resource: "vpcs" },
  name: "my-vpc",
  namespace: "default",
  oldObject: { metadata: { name: "my-vpc", namespace: "default", annotations: { "kcp.io/cluster": "consumer1" } } },
};

/** A fresh process's index: it has never listed the dependent type (it cannot, yet). */
const NEVER_LISTED: LookupResult = {
  ok: false,
  error: "vms: not listed yet",
  unavailable: "the index of vms.compute.io is not readable",
  seen: { everSynced: false, consumerSeen: false },
};

const watchOf = (rules: DependencyRule[]): RuleWatch => ({
  start: () => undefined,
  stop: () => undefined,
  hasSynced: () => true,
  list: () => rules,
});

/** kcp failing every workspace read the way a busy or restarting front-proxy does. */
function failingKcp(): { get<T>(path: string): Promise<T>; reads: number } {
  const answers = [503, 429, 500, 504];
  const kcp = {
    reads: 0,
    get<T>(path: string): Promise<T> {
      const status = answers[kcp.reads++ % answers.length]!;
      return Promise.reject(new ApiError("GET", path, status, "ServerError", "try again later"));
    },
  };
  return kcp;
}

async function restartedReplica(verdicts: Verdicts) {
  const clock = new FakeClock();
  const kcp = failingKcp();
  const source = new RuleSource({
    watch: () => watchOf([RULE]),
    resolver: new WorkspaceResolver({ base: kcp, clock }),
    logger: silentLogger(),
    clock,
    verdicts: { current: () => verdicts, hasSynced: () => true },
  });
  source.start();
  await clock.advance(0);
  await clock.advance(0);
  await source.settled();
  return { source, kcp, stop: () => source.stop() };
}

function decideOn(source: RuleSource) {
  const registry = source.current();
  assert.ok(registry, `the replica answers only once ready: ${source.notReadyReason()}`);
  const plan = planLookups(DELETE, registry.find(NET, VPCS));
  if (plan.kind !== "lookup") return plan.decision;
  return decide(
    plan,
    plan.lookups.map(() => NEVER_LISTED),
  );
}

describe("a replica restarted while workspace reads fail", () => {
  it("keeps a rule that protected: refuses (503) where its dependents may be, never 'no rules'", async () => {
    const { source, kcp, stop } = await restartedReplica(STORED);
    try {
      assert.ok(kcp.reads > 0, "the path was read, and the read failed");
      const entries = source.current()!.find(NET, VPCS).entries;
      assert.deepEqual(
        entries.map((e) => [e.rule, e.index]),
        [["compute/vm-deps", "protected"]],
      );
      const decision = decideOn(source);
      assert.equal(decision.allowed, false);
      assert.equal(!decision.allowed && decision.code, 503);
    } finally {
      stop();
    }
  });

  it("without the stored state (as before verdicts lived in the dep-ctrl workspace) it allowed: 'no-rules'", async () => {
    const { source, stop } = await restartedReplica(NO_VERDICTS);
    try {
      assert.deepEqual(decideOn(source), { allowed: true, reason: "no-rules" });
    } finally {
      stop();
    }
  });
});
