// Readiness with a broken shard: after the first full sync, an endpoint whose DependencyRule list/watch
// fails keeps the replica ready; only the reviews whose rules may come from that endpoint are refused with 503.
// The pure part (inDoubt, withVisibility) is table-tested; RuleSource runs on a fake watch and a fake clock.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import type { DependencyRule, LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import { planLookups } from "../../src/webhook/deletion/decision.ts";
import {
  createWebhookMetrics,
  RULE_ENDPOINT_UNSYNCED,
  ruleEndpointMetrics,
  type RuleEndpointMetrics,
  type WebhookMetrics,
} from "../../src/webhook/metrics.ts";
import { buildRegistry, type RuleMatch, type RuleEntry } from "../../src/webhook/rules/registry.ts";
import { inDoubt, withVisibility, type SourcedMatch, type Visibility } from "../../src/webhook/rules/visibility.ts";
import { RuleSource, type RuleWatch } from "../../src/webhook/rules/source.ts";
import { FakeClock } from "../support/fake-clock.ts";

const ROOT = "https://root.example/services/apiexport/dep/dependencies.opendefense.cloud";
const SHARD1 = "https://shard-1.example/services/apiexport/dep/dependencies.opendefense.cloud";
const NET1 = logicalClusterName("net1");
const OTHER = logicalClusterName("other");
const VPCS = { group: "net.io", resource: "vpcs" };
const SUBNETS = { group: "net.io", resource: "subnets" };

/** A rule in `cluster` whose dependent names the given network resources of root:network. */
const rule = (cluster: string, name: string, resources: string[]) =>
  ({
    metadata: { name, annotations: { "kcp.io/cluster": cluster } },
    spec: {
      dependent: { apiExportName: "c", group: "compute.io", version: "v1", kind: "VM", resource: "vms" },
      dependencies: resources.map((resource) => ({
        apiExportRef: { path: "root:network", name: "n" },
        group: "net.io",
        version: "v1",
        resource,
        fieldRef: { path: `.spec.${resource}` },
      })),
    },
  }) as unknown as DependencyRule;

/** The doubt a match carries, without its log line. */
const doubtOf = (m: SourcedMatch | undefined) =>
  m?.unseen ? { endpoints: m.unseen.endpoints, rules: m.unseen.rules } : undefined;
const entry = (rule: string) => ({ rule }) as unknown as RuleEntry;
const match = (...rules: string[]): RuleMatch => ({ entries: rules.map(entry) });
const vis = (broken: Record<string, string>, origins?: Record<string, string[]>): Visibility => ({
  broken: new Map(Object.entries(broken)),
  ruleEndpoints: origins ? new Map(Object.entries(origins)) : undefined,
});

describe("inDoubt: which reviews cannot be decided while an endpoint is broken", () => {
  const origins = { "c1/vm": [ROOT], "e1/subnet": [SHARD1] };
  const cases: [string, RuleMatch, Visibility, ReturnType<typeof inDoubt>][] = [
    ["nothing broken: never in doubt", match("e1/subnet"), vis({}, origins), undefined],
    ["nothing broken, no rule known: not in doubt either", match(), vis({}, origins), undefined],
    ["every known rule from a healthy endpoint", match("c1/vm"), vis({ [SHARD1]: "timeout" }, origins), undefined],
    [
      "a rule from the broken endpoint",
      match("c1/vm", "e1/subnet"),
      vis({ [SHARD1]: "timeout" }, origins),
      { endpoints: [SHARD1], rules: ["e1/subnet"] },
    ],
    [
      "no known rule while an endpoint is broken: the rule kcp called for may be there",
      match(),
      vis({ [SHARD1]: "timeout", [ROOT]: "refused" }, origins),
      { endpoints: [ROOT, SHARD1], rules: [] },
    ],
    [
      "origins unknown: every known rule may come from the broken endpoint",
      match("c1/vm"),
      vis({ [SHARD1]: "timeout" }),
      { endpoints: [SHARD1], rules: ["c1/vm"] },
    ],
    [
      "a rule listed from two endpoints, one broken",
      match("c1/vm"),
      vis({ [SHARD1]: "timeout" }, { "c1/vm": [ROOT, SHARD1] }),
      { endpoints: [SHARD1], rules: ["c1/vm"] },
    ],
    [
      "only the slice's endpoint failing: known rules are trusted, unknown ones are not",
      match("c1/vm"),
      vis({ "https://front-proxy/clusters/root:dep-ctrl": "refused" }, origins),
      undefined,
    ],
  ];
  for (const [name, m, v, want] of cases) it(name, () => assert.deepEqual(inDoubt(m, v), want));
});

describe("withVisibility: the registry handed out while an endpoint is broken", () => {
  const registry = buildRegistry(
    [rule("c1", "vm", ["vpcs", "subnets"]), rule("e1", "subnet", ["vpcs"])],
    new Map<string, Resolution>([["root:network", { ok: true, cluster: NET1 }]]),
  );
  const broken = vis(
    { [SHARD1]: "GET https://shard-1.example/...: no answer within 30000 ms" },
    {
      "c1/vm": [ROOT],
      "e1/subnet": [SHARD1],
    },
  );

  it("is the registry itself while nothing is broken", () => {
    assert.equal(withVisibility(registry, vis({})), registry);
  });

  it("marks doubtful matches with `unseen`; delegates everything else", () => {
    const r = withVisibility(registry, broken);
    assert.equal(r.ruleCount, registry.ruleCount);
    assert.equal(r.entryCount, registry.entryCount);
    const vpcs = r.find(NET1, VPCS);
    assert.deepEqual(doubtOf(vpcs), { endpoints: [SHARD1], rules: ["e1/subnet"] });
    assert.match(vpcs.unseen?.why ?? "", /rules e1\/subnet were listed from .*shard-1\.example.*no answer/);
    assert.deepEqual(
      vpcs.entries.map((e) => e.rule),
      ["c1/vm", "e1/subnet"],
    );
    const subnets = r.find(NET1, SUBNETS);
    assert.equal(subnets.unseen, undefined, "subnets are protected only by a rule from the healthy endpoint");
    assert.deepEqual(subnets, registry.find(NET1, SUBNETS));
    assert.deepEqual(doubtOf(r.find(OTHER, VPCS)), { endpoints: [SHARD1], rules: [] });
  });

  it("a doubtful review is refused with a 503 that names no rule, workspace or URL; the log gets them", () => {
    const review = (resource: string): AdmissionRequest => ({
      uid: "u",
      operation: "DELETE",
      resource: { group: "net.io", version: "v1", resource },
      name: "x",
      namespace: "default",
      oldObject: { metadata: { name: "x", namespace: "default", annotations: { "kcp.io/cluster": "consumer1" } } },
    });
    const r = withVisibility(registry, broken);
    const plan = planLookups(review("vpcs"), r.find(NET1, VPCS));
    assert.equal(plan.kind, "decided");
    if (plan.kind !== "decided") return;
    const d = plan.decision;
    assert.equal(d.allowed, false);
    if (d.allowed) return;
    assert.equal(d.code, 503);
    assert.equal(d.reason, "rules-unseen");
    assert.match(
      d.message,
      /^cannot check vpcs\/x: a dependency rule for vpcs is on a kcp shard the webhook cannot reach/,
    );
    assert.doesNotMatch(d.message, /shard-1|example|e1|subnet|net1|https/);
    assert.match(d.detail ?? "", /e1\/subnet/);
    assert.match(d.detail ?? "", /shard-1\.example/);
    assert.equal(planLookups(review("subnets"), r.find(NET1, SUBNETS)).kind, "lookup", "decided as usual");
  });
});

class FakeWatch implements RuleWatch {
  synced = false;
  rules: { endpoint: string; object: DependencyRule }[] = [];
  failures: { endpoint: string; error: string }[] = [];
  onChange: () => void = () => undefined;
  start(): void {}
  stop(): void {}
  hasSynced(): boolean {
    return this.synced;
  }
  list(): DependencyRule[] {
    return this.rules.map((r) => r.object);
  }
  listWithEndpoints(): { endpoint: string; object: DependencyRule }[] {
    return this.rules;
  }
  endpoints(): string[] {
    return [ROOT, SHARD1];
  }
  failing(): { endpoint: string; error: string }[] {
    return this.failures;
  }
}

async function setup() {
  const watch = new FakeWatch();
  const clock = new FakeClock();
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (l: string) => logs.push(JSON.parse(l) as Record<string, unknown>) });
  const metricsRegistry = new Registry();
  // The gauge comes with createWebhookMetrics once it is wired in there; until then the test adds it.
  const base: WebhookMetrics & Partial<RuleEndpointMetrics> = createWebhookMetrics(metricsRegistry);
  const metrics = base.ruleEndpointUnsynced ? base : { ...base, ...ruleEndpointMetrics([metricsRegistry]) };
  const source = new RuleSource({
    watch: (onChange) => {
      watch.onChange = onChange;
      return watch;
    },
    resolver: { resolve: () => Promise.resolve({ ok: true, cluster: NET1 }) },
    logger,
    metrics,
    brokenAfterMs: 5_000,
    healthPollMs: 1_000,
    clock,
  });
  source.start();
  watch.rules = [
    { endpoint: ROOT, object: rule("c1", "vm", ["vpcs", "subnets"]) },
    { endpoint: SHARD1, object: rule("e1", "subnet", ["vpcs"]) },
  ];
  watch.synced = true;
  watch.onChange();
  await clock.advance(0);
  await clock.advance(0);
  const gauge = async (): Promise<Record<string, number>> => {
    const m = (await metricsRegistry.getMetricsAsJSON()).find((x) => x.name === RULE_ENDPOINT_UNSYNCED);
    return Object.fromEntries((m?.values ?? []).map((v) => [String(v.labels["endpoint"]), v.value]));
  };
  const unseen = (provider: LogicalClusterName, gr: typeof VPCS) => doubtOf(source.current()?.find(provider, gr));
  return { watch, clock, logs, source, gauge, unseen };
}

describe("RuleSource with a broken endpoint after the first full sync", () => {
  it("stays ready, keeps the last-known rules, and refuses only what may come from the broken endpoint", async () => {
    const { watch, clock, source, unseen } = await setup();
    assert.equal(unseen(NET1, VPCS), undefined);
    watch.failures = [{ endpoint: SHARD1, error: "connect ECONNREFUSED" }];
    assert.equal(unseen(NET1, VPCS), undefined, "first seen failing now (by a review)");
    await clock.advance(4_999);
    assert.equal(unseen(NET1, VPCS), undefined, "a blip shorter than brokenAfterMs changes nothing");
    await clock.advance(1);
    assert.equal(source.notReadyReason(), undefined, "still ready");
    assert.deepEqual(unseen(NET1, VPCS), { endpoints: [SHARD1], rules: ["e1/subnet"] });
    assert.equal(unseen(NET1, SUBNETS), undefined, "subnets: only the healthy endpoint's rule");
    assert.equal(source.current()?.find(NET1, SUBNETS).entries.length, 1);
    assert.deepEqual(unseen(OTHER, VPCS), { endpoints: [SHARD1], rules: [] });
    assert.equal(source.current()?.ruleCount, 2, "the broken endpoint's last-known rule is kept");

    watch.failures = [];
    assert.equal(unseen(NET1, VPCS), undefined, "in sync again: decided as usual at once");
    source.stop();
  });

  it("a run of failures counts from its first sighting (a review or the 1 s poll); a recovery starts it again", async () => {
    const { watch, clock, source, unseen } = await setup();
    watch.failures = [{ endpoint: SHARD1, error: "e" }];
    await clock.advance(4_000); // first seen by the poll at 1 s
    watch.failures = [];
    await clock.advance(1_000); // the poll at 5 s sees it healthy
    watch.failures = [{ endpoint: SHARD1, error: "e" }];
    await clock.advance(5_000); // first seen again by the poll at 6 s
    assert.equal(unseen(NET1, VPCS), undefined, "4 s into the new run");
    await clock.advance(1_000);
    assert.notEqual(unseen(NET1, VPCS), undefined, "5 s into it");
    source.stop();
  });

  it("logs each transition once and keeps the per-endpoint gauge", async () => {
    const { watch, clock, logs, source, gauge } = await setup();
    await clock.advance(1_000);
    assert.deepEqual(await gauge(), { [ROOT]: 0, [SHARD1]: 0 });
    watch.failures = [{ endpoint: SHARD1, error: "watch silent for 75 s, past its timeout" }];
    await clock.advance(10_000);
    assert.deepEqual(await gauge(), { [ROOT]: 0, [SHARD1]: 1 });
    const broken = logs.filter((l) => /cannot list or watch DependencyRules/.test(String(l["msg"])));
    assert.equal(broken.length, 1, "logged once, not every poll");
    assert.equal(broken[0]?.["endpoint"], SHARD1);
    assert.match(String(broken[0]?.["error"]), /watch silent/);
    watch.failures = [];
    await clock.advance(1_000);
    assert.deepEqual(await gauge(), { [ROOT]: 0, [SHARD1]: 0 });
    assert.equal(logs.filter((l) => /in sync again/.test(String(l["msg"]))).length, 1);
    source.stop();
    assert.equal(clock.pending(), 0, "stop cancels the health timer");
  });

  it("a watch that cannot say where rules came from: every known rule is in doubt while one endpoint is broken", async () => {
    const clock = new FakeClock();
    const watch = {
      synced: true,
      start() {},
      stop() {},
      hasSynced: () => true,
      list: () => [rule("c1", "vm", ["vpcs"])],
      failing: () => [{ endpoint: SHARD1, error: "e" }],
    };
    const source = new RuleSource({
      watch: () => watch,
      resolver: { resolve: () => Promise.resolve({ ok: true, cluster: NET1 }) },
      logger: silentLogger(),
      brokenAfterMs: 0,
      clock,
    });
    source.start();
    await clock.advance(0);
    assert.deepEqual(doubtOf(source.current()?.find(NET1, VPCS)), {
      endpoints: [SHARD1],
      rules: ["c1/vm"],
    });
    source.stop();
  });
});
