// The soak checker's contract for the hostile consumer and the careless author's flavours (tools/soak/invariants/
// collateral.ts, refusals.ts), on hand-made histories: a 503 is excused only in the hostile workspace's namespace for
// a delete its overloaded type covers while its objects stand; a webhook failure (kcp's "failed calling webhook", as
// slow-upload starvation would surface) is a violation whenever no real fault excuses it, slow uploads or not.
import assert from "node:assert/strict";
import { test } from "node:test";
import { check } from "../../tools/soak/checker.ts";
import type { History, HostileEpisode, OpRecord } from "../../tools/soak/history.ts";
import { summary } from "../../tools/soak/report.ts";
import { historyOf, opRecord, ruleRecord } from "./soak-fixtures.ts";

const VPCS = "vpcs.network.test.io";
const ZONES = "zones.soak.test.io";
const SERVERS = "servers.soak.test.io";

const serverRule = ruleRecord(
  "soak",
  "server-dependencies",
  { group: "soak.test.io", resource: "servers", kind: "Server", version: "v1" },
  [
    { group: "network.test.io", resource: "vpcs", version: "v1", fieldRef: { path: ".spec.vpcRef.name" } },
    { group: "soak.test.io", resource: "zones", version: "v1", fieldRef: { path: ".spec.zoneRef.name" } },
  ],
);

function op(cluster: string, resource: string, namespace: string, sentAt: number, status: number, message = "") {
  const workspace = `root:${cluster}`;
  return opRecord(
    { kind: "delete-dry-run", cluster, workspace, resource, namespace, name: "x", sentAt, status },
    message,
  );
}

function history(ops: OpRecord[], hostile: HostileEpisode[]): History {
  return historyOf({ endedAt: 120_000, mode: "index lookup", watches: [serverRule], ops, hostile });
}

const names: HostileEpisode = {
  kind: "dependents",
  cluster: "hostile",
  namespace: "hostile",
  overloaded: [SERVERS],
  startAt: 10_000,
  endAt: 30_000,
  detail: "a Server naming 3000 subnets",
};
const slow: HostileEpisode = {
  kind: "slow-uploads",
  cluster: "",
  namespace: "",
  overloaded: [],
  startAt: 50_000,
  endAt: 70_000,
  detail: "30 trickling uploads to each of 2 replicas",
};
const unreadable = "cannot check dependents of vpcs/x yet: the index cannot read every servers.soak.test.io, retry";
const starved =
  'Internal error occurred: failed calling webhook "vpcs.dependencies.opendefense.cloud": failed to call webhook: ' +
  'Post "https://127.0.0.1:1/validate/n?timeout=10s": context deadline exceeded';

test("I5 excuses the hostile consumer's 503 only in its namespace, for what its overloaded type covers, while it stands", () => {
  const own = [
    op("hostile", VPCS, "hostile", 12_000, 503, unreadable),
    op("hostile", ZONES, "", 20_000, 503, unreadable), // cluster-scoped: any namespace's servers may name it
    op("hostile", VPCS, "hostile", 33_000, 503, unreadable), // inside the window after its objects went
  ];
  const collateral = [
    op("innocent", VPCS, "hostile", 12_000, 503, unreadable), // another workspace
    op("hostile", VPCS, "default", 12_000, 503, unreadable), // another namespace of its own
    op("hostile", "subnets.network.test.io", "hostile", 12_000, 503, unreadable), // a type the rule does not cover
    op("hostile", VPCS, "hostile", 40_000, 503, unreadable), // long after its objects went
  ];
  const r = check(history([...own, ...collateral], [names]));
  assert.equal(r.excusedHostile, own.length);
  assert.deepEqual(
    r.violations.map((v) => `${v.invariant} ${v.message.split(" ")[1] ?? ""}`),
    collateral.map((o) => `I5 #${o.id}`),
  );
  // Oversized references only (nothing overloaded): no 503 is excused, in its own workspace either.
  const oversized = { ...names, overloaded: [] };
  const r2 = check(history([op("hostile", VPCS, "hostile", 12_000, 503, unreadable)], [oversized]));
  assert.equal(r2.violations.length, 1);
});

test("I5 counts a webhook failure, a 429 and no answer as refusals; slow uploads excuse none of them", () => {
  const during = [
    op("innocent", VPCS, "default", 55_000, 500, starved),
    op("innocent", VPCS, "default", 56_000, 429, "Too many requests"),
    op("hostile", VPCS, "hostile", 57_000, 500, starved), // its own workspace: a webhook failure is never its own
    op("innocent", VPCS, "default", 58_000, 0, "DELETE ... timed out"),
  ];
  const fine = [op("innocent", VPCS, "default", 60_000, 200), op("innocent", VPCS, "default", 61_000, 409, "no")];
  const r = check(history([...during, ...fine], [slow]));
  assert.deepEqual(
    r.violations.map((v) => v.message.split(" ")[1]),
    during.map((o) => `#${o.id}`),
  );
  assert.match(r.violations[0]?.message ?? "", /refused \(webhook failure, status 500\).*slow-uploads under way/);
  assert.deepEqual(r.refused, { unavailable: 0, "webhook failure": 3, "lookup failed": 0, "no answer": 1 });
  assert.equal(r.checkedSlowUploads, during.length + fine.length);
  assert.match(
    summary(history([], [slow]), check(history([], [slow]))),
    /0 violations in 0 operations, 0 faults, 1 hostile episodes$/,
  );
  // A real fault excuses a webhook failure, as it does a 503: the webhook was down.
  const h = history([op("innocent", VPCS, "default", 55_000, 500, starved)], [slow]);
  h.faults.push({ kind: "kill-all-webhooks", target: "all", startAt: 54_000, endAt: 56_000, webhookDown: true });
  assert.deepEqual(
    check(h).violations.filter((v) => v.invariant === "I5"),
    [],
  );
});

test("I5 judges the careless author's consent-less flavour like the other: its dependents exist nowhere", () => {
  const h = history([op("innocent", VPCS, "default", 12_000, 503, unreadable)], []);
  h.faults.push({
    kind: "careless-rule",
    target: "root:careless-provider/careless-widgets (no index consent)",
    startAt: 10_000,
    endAt: 20_000,
    webhookDown: false,
    dependent: "widgets.careless.test.io",
    flavour: "no-index-consent",
  });
  const r = check(h);
  const i5 = r.violations.filter((v) => v.invariant === "I5"); // (I3 fires too: no probe saw protection return)
  assert.match(i5[0]?.message ?? "", /careless rule stood \(root:careless-provider/);
  assert.match(summary(h, r), /careless flavours: no-index-consent 1/);
});
