// The consumers the local-targets benchmark plays instead of kcp (bench/local-targets-kcp.ts): its figures are only
// as good as this stand-in, so it must refuse what kcp refused (a write where the claim is not accepted, a second
// create), hide what the export's virtual workspace does not list, and store objects with the API server's defaults
// in a form the planner takes as unchanged (else the benchmark's "steady state: 0 writes" would read as updates).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { localConfiguration, localTargetSets, planLocalWrites } from "../../src/controller/local-targets.ts";
import { ExportConsumers } from "../../bench/local-targets-kcp.ts";
import { consumersOf, ruleObject } from "../../bench/local-targets.ts";

const c = logicalClusterName;
const [set] = localTargetSets([parseRule(ruleObject(0))!]);
const want = localConfiguration(set!, "https://wh:9443", "Q0E=");

function twoConsumers(): ExportConsumers {
  const kcp = new ExportConsumers();
  kcp.consumers.set(c("acme"), true);
  kcp.consumers.set(c("declined"), false);
  return kcp;
}

describe("bench: the export's consumers without kcp", () => {
  it("takes the planner's creates where the claim is accepted and refuses the rest", () => {
    const kcp = twoConsumers();
    const counts = kcp.apply([
      { kind: "create", cluster: c("acme"), object: want, reason: "" },
      { kind: "create", cluster: c("acme"), object: want, reason: "" },
      { kind: "create", cluster: c("declined"), object: want, reason: "" },
    ]);
    assert.deepEqual(counts, { create: 1, update: 0, delete: 0, refused: 2 });
    assert.equal(kcp.count(), 1);
  });

  it("stores what the API server answers, which the planner sees as unchanged: a steady state plans nothing", () => {
    const kcp = twoConsumers();
    assert.deepEqual(
      planLocalWrites(want, kcp.view()).map((a) => [a.kind, a.cluster]),
      [["create", "acme"]],
    );
    kcp.apply(planLocalWrites(want, kcp.view()));
    const [stored] = kcp.view().existing;
    assert.equal(stored!.object.metadata.annotations?.["kcp.io/cluster"], "acme");
    assert.ok(stored!.object.metadata.uid && stored!.object.metadata.resourceVersion);
    assert.equal(stored!.object.webhooks![0]!.matchPolicy, "Equivalent");
    assert.deepEqual(planLocalWrites(want, kcp.view()), []);
  });

  it("lists configurations only where the claim is accepted; one that declined later keeps its own", () => {
    const kcp = twoConsumers();
    kcp.apply(planLocalWrites(want, kcp.view()));
    kcp.consumers.set(c("acme"), false);
    assert.deepEqual(kcp.view().existing, []);
    assert.equal(kcp.count(c("acme")), 1);
    assert.deepEqual(kcp.apply([{ kind: "delete", cluster: c("acme"), name: want.metadata.name, reason: "" }]), {
      create: 0,
      update: 0,
      delete: 0,
      refused: 1,
    });
  });

  it("updates and deletes where it may", () => {
    const kcp = twoConsumers();
    kcp.apply(planLocalWrites(want, kcp.view()));
    const other = localConfiguration(set!, "https://wh2:9443", "Q0E=");
    const update = planLocalWrites(other, kcp.view());
    assert.deepEqual(
      update.map((a) => a.kind),
      ["update"],
    );
    assert.deepEqual(kcp.apply(update), { create: 0, update: 1, delete: 0, refused: 0 });
    assert.deepEqual(planLocalWrites(other, kcp.view()), []);
    assert.deepEqual(
      planLocalWrites(undefined, kcp.view()).map((a) => a.kind),
      ["delete"],
    );
    kcp.apply(planLocalWrites(undefined, kcp.view()));
    assert.equal(kcp.count(), 0);
  });

  it("declines one consumer in every n/declined, and none when asked for none", () => {
    const declined = (k: ExportConsumers) => [...k.consumers.values()].filter((ok) => !ok).length;
    assert.equal(declined(consumersOf(1000, 100)), 100);
    assert.equal(declined(consumersOf(50, 0)), 0);
  });
});
