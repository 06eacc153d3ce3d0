// The soak's contract for the hostile provider (tools/soak/hostile-provider.ts), on hand-made histories: its episodes
// excuse no refusal anywhere, not even in its own workspace (I5); a connection to its listener is a violation (I6) and
// the report says how kcp answered its writes; and the weakened build's test double (status-reader.ts) refuses by a
// rule's status exactly where the webhook at 3571bae did: a fail-closed reason on a rule gating the deleted type.
import assert from "node:assert/strict";
import { test } from "node:test";
import { check } from "../../tools/soak/checker.ts";
import type { History, HostileEpisode, OpRecord } from "../../tools/soak/history.ts";
import { summary } from "../../tools/soak/report.ts";
import { readBackRefusal } from "../../tools/soak/status-reader.ts";
import { historyOf, opRecord, ruleRecord } from "./soak-fixtures.ts";

const VPCS = "vpcs.network.test.io";
const gadgetRule = ruleRecord(
  "evil",
  "gadget-deps",
  { group: "hostile.test.io", resource: "gadgets", kind: "Gadget", version: "v1" },
  [{ group: "network.test.io", resource: "vpcs", version: "v1", fieldRef: { path: ".spec.vpcRef.name" } }],
);
const forged: HostileEpisode = {
  kind: "provider",
  cluster: "evil",
  namespace: "",
  overloaded: [],
  startAt: 10_000,
  endAt: 30_000,
  detail: "forged its rule's status DependentsIndexed=False IndexRevoked",
};
const unreadable = "cannot check dependents of vpcs yet (weakened build: gadget-deps's status says IndexRevoked)";

const del = (cluster: string, sentAt: number, status: number): OpRecord =>
  opRecord(
    {
      kind: "delete",
      cluster,
      workspace: `root:${cluster}`,
      resource: VPCS,
      namespace: "default",
      name: "v",
      sentAt,
      status,
    },
    status === 503 ? unreadable : "",
  );

function history(ops: OpRecord[], extra: Partial<History> = {}): History {
  return historyOf({ endedAt: 60_000, mode: "index lookup", watches: [gadgetRule], ops, hostile: [forged], ...extra });
}

test("I5: a hostile provider's forgery excuses no refusal, in an innocent workspace or its own", () => {
  const refused = [del("innocent", 12_000, 503), del("evil", 20_000, 503)];
  const r = check(history([...refused, del("innocent", 14_000, 200)]));
  assert.deepEqual(
    r.violations.map((v) => `${v.invariant} ${v.message.split(" ")[1] ?? ""}`),
    refused.map((o) => `I5 #${o.id}`),
  );
  assert.match(r.violations[0]?.message ?? "", /the hostile provider under way/);
  assert.equal(r.checkedProvider, 3);
  assert.equal(r.excusedHostile, 0);
});

test("I6 fires when the hostile provider's listener accepted a connection; the report counts its writes", () => {
  const forge = (sentAt: number, status: number): OpRecord =>
    opRecord({
      kind: "forge-status",
      cluster: "evil",
      workspace: "root:hostile-provider",
      resource: "dependencyrules",
      namespace: "",
      name: "gadget-deps",
      sentAt,
      status,
    });
  const quiet = history([forge(11_000, 403), forge(13_000, 403)], { tenantConnections: 0 });
  assert.deepEqual(check(quiet).violations, []);
  assert.match(summary(quiet, check(quiet)), /status forgeries 2 \(403: 2\).*its listener accepted 0 connections/);
  const followed = check(history([], { tenantConnections: 2 }));
  assert.deepEqual(
    followed.violations.map((v) => v.invariant),
    ["I6"],
  );
  assert.match(followed.violations[0]?.message ?? "", /accepted 2 connection\(s\)/);
});

test("the status-reading double refuses only where a rule gating the type says its index is out of reach", () => {
  const withReason = (reason: string): Record<string, unknown> => ({
    ...gadgetRule.object,
    status: { conditions: [{ type: "DependentsIndexed", status: "False", reason }] },
  });
  for (const reason of ["IndexRevoked", "IndexLost", "IndexResyncing"])
    assert.equal(readBackRefusal([withReason(reason)], VPCS), `gadget-deps's status says ${reason}`);
  for (const reason of ["Indexed", "LiveLookup", "IndexForbidden"])
    assert.equal(readBackRefusal([withReason(reason)], VPCS), undefined, reason);
  assert.equal(readBackRefusal([withReason("IndexRevoked")], "subnets.network.test.io"), undefined);
});
