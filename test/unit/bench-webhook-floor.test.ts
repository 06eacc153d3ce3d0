// The pure parts of bench/webhook-floor.ts: its figures are comparisons across conditions, so each condition must get
// the same number of DELETEs in blocks spread early and late alike; and kcp refuses a webhook answer whose uid is not
// the request's, so the floor server must echo it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { allowedReply } from "../../bench/webhook-floor-server.ts";
import { schedule } from "../../bench/webhook-floor-vwc.ts";

describe("webhook-floor schedule", () => {
  it("alternates rounds forwards and backwards (a b c c b a ...)", () => {
    const order = schedule(["alone", "floor", "webhook"], 200, 50).map((b) => b.condition[0]);
    assert.equal(order.join(""), "afwwfaafwwfa");
  });

  it("gives every condition exactly its DELETEs, the last round the remainder", () => {
    const blocks = schedule(["alone", "floor"], 120, 50);
    for (const c of ["alone", "floor"] as const) {
      const counts = blocks.filter((b) => b.condition === c).map((b) => b.count);
      assert.deepEqual(counts, [50, 50, 20]);
    }
  });
});

describe("webhook-floor server reply", () => {
  it("allows and echoes the request's uid", () => {
    const reply: unknown = JSON.parse(allowedReply(JSON.stringify({ request: { uid: "u-1", operation: "DELETE" } })));
    assert.deepEqual(reply, {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: "u-1", allowed: true },
    });
  });
});
