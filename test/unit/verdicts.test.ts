// The rule verdicts in the dep-ctrl workspace (src/api/verdicts.ts): what survives a round trip through the
// ConfigMaps, what is dropped, the size at 10,000 rules, and the RBAC that lets the controller write exactly them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import {
  bucketOfConfigMap,
  parseVerdicts,
  verdictBuckets,
  verdictConfigMap,
  verdictsName,
  VERDICT_BUCKETS,
} from "../../src/api/verdict-configmaps.ts";
import { verdictOf, type Verdicts } from "../../src/api/verdicts.ts";
import { CONDITION_TYPES, type Condition } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";

const T = "2026-11-27T21:00:00Z";

function status(n: number) {
  const conditions: Condition[] = CONDITION_TYPES.map((type) => ({
    type,
    status: n % 2 ? "True" : "False",
    reason: type === "DependentsIndexed" ? "IndexRevoked" : "Ready",
    message: "not kept",
    observedGeneration: 3,
    lastTransitionTime: T,
  }));
  return { observedGeneration: 3, conditions };
}

function manyRules(n: number): Verdicts {
  const rules = new Map();
  const paths = new Map();
  for (let i = 0; i < n; i++) {
    rules.set(`2x4kq7abc${i.toString(36).padStart(6, "0")}/vm-dependencies-${i}`, verdictOf(status(i), `uid-${i}`));
    paths.set(`root:providers:network-${i}`, logicalClusterName(`1b2c3d4e${i.toString(36).padStart(8, "0")}`));
  }
  return { rules, paths };
}

const roundTrip = (v: Verdicts): Verdicts =>
  parseVerdicts(verdictBuckets(v).map((data, bucket) => verdictConfigMap(bucket, data)));

describe("rule verdicts", () => {
  it("survive the ConfigMaps unchanged: every condition's status, reason and time, the generation and uid", () => {
    const v = manyRules(50);
    const back = roundTrip(v);
    assert.deepEqual([...back.rules].sort(), [...v.rules].sort());
    assert.deepEqual([...back.paths].sort(), [...v.paths].sort());
  });

  it("keep no message: only what a decision or a transition time needs", () => {
    const v = verdictOf(status(1), "u");
    assert.equal(JSON.stringify(v).includes("not kept"), false);
  });

  it("are spread over the buckets with room to spare at 10,000 rules (a ConfigMap holds at most 1 MiB)", () => {
    const buckets = verdictBuckets(manyRules(10_000));
    assert.equal(buckets.length, VERDICT_BUCKETS);
    const largest = Math.max(...buckets.map((b) => Buffer.byteLength(b)));
    assert.ok(largest < 256 * 1024, `largest bucket ${largest} bytes`);
    assert.ok(
      buckets.every((b) => b.length > 1000),
      "every bucket gets a share",
    );
  });

  it("are the same string for the same verdicts in any insertion order (a steady state writes nothing)", () => {
    const v = manyRules(100);
    const reversed: Verdicts = { rules: new Map([...v.rules].reverse()), paths: new Map([...v.paths].reverse()) };
    assert.deepEqual(verdictBuckets(reversed), verdictBuckets(v));
  });

  it("drop what does not parse, keep the rest", () => {
    const data = JSON.stringify({
      rules: {
        "c/good": { g: 1, c: { Ready: ["True", "Ready", T] } },
        "c/bad-status": { g: 1, c: { Ready: ["Maybe", "Ready", T] } },
        "c/bad-time": { g: 1, c: { Ready: ["True", "Ready", "tomorrow"] } },
        "c/not-an-object": 7,
      },
      paths: { "root:a": "cluster-a", "root:b": "Not A Cluster!" },
    });
    const v = parseVerdicts([{ data: { "verdicts.json": data } }, { data: { "verdicts.json": "{not json" } }, {}]);
    assert.deepEqual(v.rules.get("c/good"), {
      generation: 1,
      conditions: { Ready: { status: "True", reason: "Ready", since: T } },
    });
    assert.deepEqual(v.rules.get("c/bad-status")?.conditions, {});
    assert.deepEqual(v.rules.get("c/bad-time")?.conditions, {});
    assert.equal(v.rules.has("c/not-an-object"), false);
    assert.deepEqual([...v.paths], [["root:a", "cluster-a"]]);
  });

  it("name their bucket, and nothing else parses as one", () => {
    assert.equal(bucketOfConfigMap(verdictConfigMap(7, "{}")), 7);
    assert.equal(bucketOfConfigMap({ metadata: { name: "dependency-webhook-index" } }), undefined);
    assert.equal(bucketOfConfigMap({ metadata: { name: verdictsName(VERDICT_BUCKETS) } }), undefined);
  });

  it("are written under exactly the names the controller may update (deploy/rbac/dep-ctrl-workspace.yaml)", () => {
    type Rule = { resources?: string[]; verbs: string[]; resourceNames?: string[] };
    type Doc = { kind?: string; metadata?: { name?: string }; rules?: Rule[] };
    const docs = parseAllDocuments(readFileSync("deploy/rbac/dep-ctrl-workspace.yaml", "utf8")).map(
      (d) => d.toJS() as Doc,
    );
    const controller = docs.find((d) => d.kind === "ClusterRole" && d.metadata?.name === "kcp-dependency-controller");
    const update = controller?.rules?.find((r) => r.resources?.includes("configmaps") && r.verbs.includes("update"));
    assert.deepEqual(
      update?.resourceNames,
      Array.from({ length: VERDICT_BUCKETS }, (_, i) => verdictsName(i)),
    );
  });
});
