// The registry updates in work proportional to the change (issue 30): counted operations, never wall time. At 8,000
// rules on one protected (provider, group/resource), the from-scratch rebuild this replaced derived all 8,000 rules
// on every event (and compared each with the target's list); here one change derives one rule and writes its entry,
// and a status-only event derives nothing. A property: after any sequence of events the incremental registry equals
// a fresh build of the same rules.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Verdicts } from "../../src/api/verdicts.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { buildRegistry, newCounter, RegistryState, type RuleRegistry } from "../../src/webhook/rules/registry.ts";
import { ruleObject } from "./helpers-rules.ts";

const VPCS = { group: "network.test.io", resource: "vpcs" };
const NETWORK = logicalClusterName("network");
const RESOLVED = new Map<string, Resolution>([["root:network", { ok: true, cluster: NETWORK }]]);

/** A rule of workspace `ws-<i % authors>` protecting VPCs of root:network, created at second `i`. */
function rule(i: number, o: { field?: string; authors?: number; status?: unknown; rv?: string } = {}) {
  const obj = ruleObject(`ws-${i % (o.authors ?? 1000)}`, `r-${i}`, { resource: "virtualmachines" }, [
    { path: "root:network", group: VPCS.group, resource: "vpcs", fieldPath: o.field ?? ".spec.vpcRef.name" },
  ]);
  const meta = obj["metadata"] as Record<string, unknown>;
  meta["uid"] = `uid-${i}`;
  meta["creationTimestamp"] = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  if (o.rv) meta["resourceVersion"] = o.rv;
  if (o.status) obj["status"] = o.status;
  return obj;
}

function loaded(n: number) {
  const counter = newCounter();
  const state = new RegistryState({ counter, maxRulesPerWorkspace: 200 });
  const rules = Array.from({ length: n }, (_, i) => rule(i));
  state.observe(rules);
  state.settle(RESOLVED);
  return { state, counter, rules };
}

describe("incremental registry: work proportional to the change (counted)", () => {
  it("among 8,000 rules on one target, changing one derives one rule and writes one entry per table", () => {
    const { state, counter, rules } = loaded(8000);
    assert.equal(state.current().find(NETWORK, VPCS).entries.length, 8000);
    assert.equal(counter.derived, 8000, "the first build derives every rule once");
    const before = { ...counter };
    rules[4321] = rule(4321, { field: ".spec.otherVpcRef.name" });
    state.observe(rules);
    assert.equal(state.settle(RESOLVED), true);
    assert.equal(counter.parsed - before.parsed, 1);
    assert.equal(counter.derived - before.derived, 1);
    assert.equal(counter.entryWrites - before.entryWrites, 2, "one entry by provider, one by group/resource");
    const entry = state
      .current()
      .find(NETWORK, VPCS)
      .entries.find((e) => e.rule === "ws-321/r-4321");
    assert.deepEqual(
      entry?.fieldPaths.map((p) => p.source),
      [".spec.otherVpcRef.name"],
    );
  });

  it("adding and removing one rule among 8,000 writes only its entries", () => {
    const { state, counter, rules } = loaded(8000);
    const before = { ...counter };
    state.observe([...rules, rule(8000)]);
    state.settle(RESOLVED);
    state.observe(rules);
    state.settle(RESOLVED);
    assert.equal(counter.derived - before.derived, 1, "the removal derives nothing");
    assert.equal(counter.entryWrites - before.entryWrites, 4);
    assert.equal(state.current().find(NETWORK, VPCS).entries.length, 8000);
  });

  it("a status-only or resourceVersion-only event causes no rebuild and no announcement", () => {
    const { state, counter, rules } = loaded(8000);
    const view = state.current();
    const before = { ...counter };
    rules[17] = rule(17, { rv: "999", status: { conditions: [{ type: "Ready", status: "True" }] } });
    state.observe(rules);
    assert.equal(state.settle(RESOLVED), false, "nothing a lookup sees changed");
    assert.equal(counter.derived - before.derived, 1, "only the replaced object is looked at");
    assert.equal(counter.entryWrites, before.entryWrites, "no entry written");
    assert.equal(state.current(), view, "the same registry: nobody is told of a change");
  });

  it("a verdict that changes nothing enforced writes nothing; one that does writes that rule only", () => {
    const { state, counter, rules } = loaded(8000);
    state.observe(rules);
    const since = (uid: string, reason: string): Verdicts["rules"] =>
      new Map([["ws-5/r-5", { uid, generation: 1, conditions: { Ready: { status: "True", reason, since: "x" } } }]]);
    const before = { ...counter };
    assert.equal(state.settle(RESOLVED, { rules: since("uid-5", "Ready"), paths: new Map() }), false);
    assert.equal(counter.entryWrites, before.entryWrites);
    const rejected = {
      uid: "uid-5",
      generation: 1,
      conditions: { ReferencesValid: { status: "False" as const, reason: "DependentInvalid", since: "x" } },
    };
    state.observe(rules);
    assert.equal(state.settle(RESOLVED, { rules: new Map([["ws-5/r-5", rejected]]), paths: new Map() }), true);
    assert.equal(counter.derived - before.derived, 1, "the verdict scan derives only the rule whose verdict matters");
    assert.equal(counter.entryWrites - before.entryWrites, 2);
  });
});

describe("incremental registry: rules past their author's cap", () => {
  it("the oldest rules win; removing one brings the next within, with one extra derivation", () => {
    const counter = newCounter();
    const state = new RegistryState({ counter, maxRulesPerWorkspace: 2 });
    const rules = [rule(0, { authors: 1 }), rule(1, { authors: 1 }), rule(2, { authors: 1 })];
    state.observe(rules);
    state.settle(RESOLVED);
    const enforced = (r: RuleRegistry) => r.find(NETWORK, VPCS).entries.map((e) => e.rule);
    assert.deepEqual(enforced(state.current()), ["ws-0/r-0", "ws-0/r-1"]);
    assert.match(
      state
        .current()
        .problems.map((p) => `${p.rule}: ${p.message}`)
        .join("\n"),
      /ws-0\/r-2: not enforced: .*more than 2 DependencyRules/,
    );
    const before = counter.derived;
    state.observe(rules.slice(1));
    state.settle(RESOLVED);
    assert.equal(counter.derived - before, 1, "only the rule that moved within the cap is derived");
    assert.deepEqual(enforced(state.current()), ["ws-0/r-1", "ws-0/r-2"]);
  });
});

/** What a lookup can see of a registry, for comparing two. */
function picture(r: RuleRegistry) {
  const targets = ["network", "other"].flatMap((p) => ["vpcs", "subnets"].map((res) => [p, res] as const));
  return {
    ruleCount: r.ruleCount,
    entryCount: r.entryCount,
    problems: r.problems.map((p) => `${p.rule}: ${p.message}`).sort(),
    types: r.dependentTypes().map((t) => [t.dependent, t.fieldPaths.map((p) => p.source)]),
    find: targets.map(([p, res]) => r.find(logicalClusterName(p), { group: VPCS.group, resource: res })),
    legacy: ["vpcs", "subnets"].map((res) => r.find(undefined, { group: VPCS.group, resource: res })),
  };
}

const arbRule = fc.record({
  id: fc.integer({ min: 0, max: 11 }),
  author: fc.integer({ min: 0, max: 2 }),
  created: fc.integer({ min: 0, max: 5 }),
  path: fc.constantFrom("root:network", "root:other", "root:missing"),
  resource: fc.constantFrom("vpcs", "subnets"),
  field: fc.constantFrom(".spec.vpcRef.name", ".spec.a.name"),
});
type Spec = typeof arbRule extends fc.Arbitrary<infer T> ? T : never;

function objectOf(s: Spec) {
  const obj = ruleObject(`ws-${s.author}`, `r-${s.id}`, { resource: "virtualmachines" }, [
    { path: s.path, group: VPCS.group, resource: s.resource, fieldPath: s.field },
  ]);
  const meta = obj["metadata"] as Record<string, unknown>;
  meta["uid"] = `uid-${s.id}`;
  meta["creationTimestamp"] = `2026-01-01T00:00:0${s.created}Z`;
  return obj;
}

const arbEvent = fc.oneof(
  fc.record({ kind: fc.constant("put" as const), rule: arbRule }),
  fc.record({ kind: fc.constant("status" as const), id: fc.integer({ min: 0, max: 11 }) }),
  fc.record({ kind: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 11 }) }),
  fc.record({ kind: fc.constant("resolve" as const), other: fc.constantFrom("other", "network", "gone") }),
  fc.record({ kind: fc.constant("verdict" as const), id: fc.integer({ min: 0, max: 11 }), rejected: fc.boolean() }),
);

describe("incremental registry equals a fresh build", () => {
  it("after any sequence of rule, status, resolution and verdict events", () => {
    fc.assert(
      fc.property(fc.array(arbEvent, { maxLength: 40 }), fc.integer({ min: 1, max: 4 }), (events, cap) => {
        const state = new RegistryState({ maxRulesPerWorkspace: cap });
        const rules = new Map<number, Record<string, unknown>>();
        const resolutions = new Map<string, Resolution>(RESOLVED);
        let verdicts: Verdicts = { rules: new Map(), paths: new Map() };
        for (const ev of events) {
          if (ev.kind === "put") rules.set(ev.rule.id, objectOf(ev.rule));
          else if (ev.kind === "delete") rules.delete(ev.id);
          else if (ev.kind === "status" && rules.has(ev.id))
            rules.set(ev.id, { ...rules.get(ev.id)!, status: { conditions: [] } });
          else if (ev.kind === "resolve") {
            if (ev.other === "gone") resolutions.set("root:other", { ok: false, reason: "no such workspace" });
            else resolutions.set("root:other", { ok: true, cluster: logicalClusterName(ev.other) });
          } else if (ev.kind === "verdict") {
            const author = rules.get(ev.id)?.["metadata"] as { annotations?: Record<string, string> } | undefined;
            const key = `${author?.annotations?.["kcp.io/cluster"]}/r-${ev.id}`;
            const m = new Map(verdicts.rules);
            const reason = ev.rejected ? "DependentInvalid" : "Valid";
            const status = ev.rejected ? ("False" as const) : ("True" as const);
            m.set(key, {
              uid: `uid-${ev.id}`,
              generation: 1,
              conditions: { ReferencesValid: { status, reason, since: "x" } },
            });
            verdicts = { rules: m, paths: new Map() };
          }
          state.observe([...rules.values()]);
          state.settle(new Map(resolutions), verdicts);
        }
        const fresh = buildRegistry([...rules.values()], resolutions, { verdicts, maxRulesPerWorkspace: cap });
        assert.deepEqual(picture(state.current()), picture(fresh));
      }),
      { numRuns: 300 },
    );
  });
});
