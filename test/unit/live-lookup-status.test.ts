// `--lookup=auto` without the provider's index consent but with the per-shard read grant: live lists protect the
// dependent type. The index report carries that next to the index state (per replica, merged), the controller's
// DependentsIndexed condition says so (LiveLookup), and the webhook's registry reads that reason back as protecting.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import {
  indexReportConfigMap,
  INDEX_REPORT_PATH,
  parseIndexReport,
  type IndexReport,
} from "../../src/api/index-report.ts";
import type { Condition, DependencyRuleStatus, LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { parseRule } from "../../src/api/rule.ts";
import { computeStatus, type RuleFacts } from "../../src/controller/status.ts";
import { toApiError } from "../../src/kcp/answers.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { found, unavailable, type FinderAnswer } from "../../src/webhook/deletion/finder.ts";
import { HybridDependentFinder } from "../../src/webhook/deletion/hybrid.ts";
import { LookupBook } from "../../src/webhook/deletion/lookup-book.ts";
import { reportedLookups } from "../../src/webhook/deletion/protection.ts";
import { IndexReporter, mergeReports, reportOf } from "../../src/webhook/deletion/index/report.ts";
import { indexTrust } from "../../src/api/verdicts.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { fakeConfigMap } from "../support/fake-configmap.ts";
import { ruleObject, vmLookup } from "./helpers-rules.ts";

const VM = "compute/compute.example.io/compute.example.io/v1/virtualmachines";
const DISK = "compute/compute.example.io/compute.example.io/v1/disks";
const FORBIDDEN = { state: "failing", reason: "Forbidden" } as const;

describe("index report: what protects each dependent type", () => {
  it("reportOf puts the finder's last source next to the index state; a type not looked up carries none", () => {
    const health = [
      { type: VM, state: "failing" as const, errors: ["GET x: 403 Forbidden"] },
      { type: DISK, state: "ready" as const, errors: [] },
    ];
    assert.deepEqual(reportOf(health, new Map([[VM, "live"]])), {
      [VM]: { ...FORBIDDEN, lookup: "live" },
      [DISK]: { state: "ready" },
    });
  });

  it("survives the ConfigMap; a report without the field (an older webhook) or with an unknown one reads as before", () => {
    const report: IndexReport = {
      [VM]: { ...FORBIDDEN, lookup: "live" },
      [DISK]: { state: "syncing", lookup: "none" },
    };
    assert.deepEqual(parseIndexReport(indexReportConfigMap(report)), report);
    const old = {
      data: { "types.json": JSON.stringify({ [VM]: FORBIDDEN, [DISK]: { state: "ready", lookup: "?" } }) },
    };
    assert.deepEqual(parseIndexReport(old), { [VM]: FORBIDDEN, [DISK]: { state: "ready" } });
  });

  it("merges monotonically: live on any replica wins, in any order, while the state stays the worst", () => {
    const none: IndexReport = { [VM]: { ...FORBIDDEN, lookup: "none" } };
    const live: IndexReport = { [VM]: { state: "syncing", lookup: "live" } };
    const silent: IndexReport = { [VM]: FORBIDDEN };
    const want = { [VM]: { ...FORBIDDEN, lookup: "live" } };
    for (const order of [
      [none, live, silent],
      [live, silent, none],
      [silent, none, live],
    ])
      assert.deepEqual(mergeReports(order), want);
    assert.deepEqual(mergeReports([none, silent]), { [VM]: { ...FORBIDDEN, lookup: "none" } });
    assert.deepEqual(mergeReports([silent, silent]), { [VM]: FORBIDDEN }, "no replica reports a lookup: none shown");
  });

  it("the reporter publishes what the lookup book learned, as the decision reports it", async () => {
    const { client, report } = fakeConfigMap();
    const clock = new FakeClock();
    const health = () => [{ type: VM, state: "failing" as const, errors: ["403 Forbidden"] }];
    const book = new LookupBook({ clock, onChange: () => r.changed() });
    const lookups = (states: IndexReport) => reportedLookups("auto", states, (k) => book.learned(k), clock.now());
    const r = new IndexReporter({ client, health, logger: pino({ level: "silent" }), clock, replica: "a", lookups });
    r.start();
    await clock.advance(2_000);
    assert.deepEqual(report(), { [VM]: FORBIDDEN });
    book.looked(VM, "live", clock.now(), undefined);
    await clock.advance(2_000);
    assert.deepEqual(report(), { [VM]: { ...FORBIDDEN, lookup: "live" } }, INDEX_REPORT_PATH);
    await r.stop();
  });
});

describe("the hybrid finder tells the reporter (through the lookup book) when a type's source changes", () => {
  it("once per change, not per lookup", async () => {
    let live: () => FinderAnswer = () => found([], true);
    let changes = 0;
    const h = new HybridDependentFinder({
      index: { find: () => Promise.resolve(unavailable("failing", "the index is not readable", "403")) },
      live: { find: () => Promise.resolve().then(() => live()) },
      indexState: () => FORBIDDEN,
      logger: pino({ level: "silent" }),
      book: new LookupBook({ onChange: () => changes++ }),
    });
    await h.find(vmLookup(), 10);
    await h.find(vmLookup(), 10);
    assert.equal(changes, 1);
    live = () => {
      throw toApiError("GET", "/clusters/c/apis/x", 403, "{}");
    };
    await h.find(vmLookup(), 10);
    assert.deepEqual([changes, [...h.lastSources().values()]], [2, ["none"]]);
  });
});

const NET = logicalClusterName("netcluster");
const rule = parseRule(ruleObject("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }], 1))!;
const T0 = "2026-01-01T00:00:00Z";

function status(index: RuleFacts["index"], previous?: Condition): DependencyRuleStatus {
  const facts: RuleFacts = {
    resolutions: new Map<string, Resolution>([["root:network-provider", { ok: true, cluster: NET }]]),
    installs: new Map<LogicalClusterName, { ok: true }>([[NET, { ok: true }]]),
    references: { dependentInvalid: false, invalidDependencies: new Set(), problems: [], unknown: false },
    ...(index ? { index } : {}),
  };
  return computeStatus(rule, facts, previous ? { conditions: [previous] } : undefined, T0);
}
const cond = (s: DependencyRuleStatus, type: string): Condition => s.conditions!.find((c) => c.type === type)!;

describe("DependentsIndexed: protected by live lookups", () => {
  it("consent missing, live lists answered: True, LiveLookup, how to use the index instead; Ready", () => {
    const s = status({ ...FORBIDDEN, lookup: "live" });
    const c = cond(s, "DependentsIndexed");
    assert.deepEqual([c.status, c.reason], ["True", "LiveLookup"]);
    assert.match(c.message, /^protected by live lookups of .* \(the per-shard read grant\); .*provider-index\.yaml/);
    assert.deepEqual([cond(s, "Ready").status, cond(s, "Ready").reason], ["True", "Ready"]);
  });

  it("no lookup reported keeps the verdict (a restarted webhook); none ends it; a ready index is Indexed", () => {
    const live = cond(status({ ...FORBIDDEN, lookup: "live" }), "DependentsIndexed");
    assert.equal(cond(status(FORBIDDEN), "DependentsIndexed").reason, "IndexForbidden", "as before without it");
    assert.equal(cond(status(FORBIDDEN, live), "DependentsIndexed").reason, "LiveLookup");
    assert.equal(cond(status({ ...FORBIDDEN, lookup: "none" }, live), "DependentsIndexed").reason, "IndexForbidden");
    assert.equal(cond(status({ state: "ready", lookup: "live" }, live), "DependentsIndexed").reason, "Indexed");
  });
});

describe("the webhook's registry: LiveLookup protects", () => {
  it("reads the controller's verdict as protected", () => {
    const verdict = (reason: string) => ({
      generation: 1,
      conditions: { DependentsIndexed: { status: "True" as const, reason, since: "2026-01-01T00:00:00Z" } },
    });
    assert.equal(indexTrust(verdict("LiveLookup")), "protected");
    assert.equal(indexTrust(verdict("IndexForbidden")), "not-enforced");
  });
});
