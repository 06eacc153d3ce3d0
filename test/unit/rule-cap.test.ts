// Rules per workspace (src/api/rule-cap.ts): the one queue the webhook's registry, its rule admission and the
// controller decide from. The oldest win (creationTimestamp, then name); the controller installs nothing for a rule
// past the cap and says so on its status.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AuthorCaps } from "../../src/api/rule-cap.ts";
import { parseRule } from "../../src/api/rule.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { planWrites, rulesOverCap, type ObservedRule, type RuleObject } from "../../src/controller/plan.ts";
import { computeStatus } from "../../src/controller/status.ts";
import { ruleObject } from "./helpers-rules.ts";

function observed(cluster: string, name: string, created: string): ObservedRule {
  const object = ruleObject(cluster, name, { resource: "virtualmachines" }, [
    { path: "root:network", group: "network.test.io", resource: "vpcs" },
  ]) as RuleObject;
  (object.metadata as Record<string, unknown>)["creationTimestamp"] = created;
  return { parsed: parseRule(object)!, object, endpoint: "https://shard" };
}

describe("AuthorCaps", () => {
  it("keeps each author's oldest within the cap, by creationTimestamp then name; a rule without one counts as newest", () => {
    const k = (name: string) => ({ cluster: logicalClusterName("a"), name });
    const caps = AuthorCaps.of(
      [
        { key: k("late"), created: "2026-01-02T00:00:00Z" },
        { key: k("new") },
        { key: k("b"), created: "2026-01-01T00:00:00Z" },
        { key: k("a"), created: "2026-01-01T00:00:00Z" },
        { key: { cluster: logicalClusterName("other"), name: "x" }, created: "2027-01-01T00:00:00Z" },
      ],
      2,
    );
    assert.deepEqual(
      ["a/a", "a/b", "a/late", "a/new", "other/x"].map((key) => caps.within(key)),
      [true, true, false, false, true],
    );
    assert.deepEqual(caps.remove("a/a"), ["a/late"], "the next oldest moves within");
    assert.deepEqual(caps.add({ key: k("early"), created: "2025-01-01T00:00:00Z" }), ["a/late"], "and out again");
  });
});

describe("controller: rules past their author's cap", () => {
  const rules = [
    observed("ws", "second", "2026-01-01T00:00:02Z"),
    observed("ws", "first", "2026-01-01T00:00:01Z"),
    observed("ws", "third", "2026-01-01T00:00:03Z"),
  ];
  const resolutions = new Map([["root:network", { ok: true as const, cluster: logicalClusterName("net") }]]);

  it("decides which are over as the registry does, and installs nothing for them", () => {
    const overCap = rulesOverCap(rules, 2);
    assert.deepEqual([...(overCap?.rules ?? [])], ["ws/third"]);
    assert.equal(rulesOverCap(rules, 3), undefined);
    const obs = {
      rules,
      existing: [],
      resolutions,
      references: new Map(),
      verdicts: { rules: new Map(), paths: new Map() },
    };
    const vwc = (o: typeof obs & { overCap?: typeof overCap }) =>
      JSON.stringify(planWrites(o, "https://webhook").desired.get(logicalClusterName("net")));
    assert.ok(vwc(obs).includes("vpcs"));
    const onlyThird = { ...obs, rules: [rules[2]!], ...(overCap ? { overCap } : {}) };
    assert.equal(vwc(onlyThird), undefined, "the over-cap rule alone installs no configuration");
  });

  it("writes a status saying the rule is not enforced and why", () => {
    const status = computeStatus(
      rules[2]!.parsed,
      { resolutions, installs: new Map(), overCap: 2 },
      undefined,
      "2026-01-01T00:00:00Z",
    );
    const by = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(by["WebhooksInstalled"]?.reason, "RuleCapExceeded");
    assert.equal(by["Ready"]?.status, "False");
    assert.match(by["Ready"]?.message ?? "", /more than 2 DependencyRules \(--max-rules-per-workspace\)/);
  });
});
