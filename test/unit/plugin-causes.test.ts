// Reading a refused dry-run DELETE: causes first, the message as fallback, counts and completeness.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { answerOf, blockersFromMessage, parseBlockerId, parseRefusal } from "../../src/plugin/causes.ts";
import { denyMessage } from "../../src/webhook/deletion/decision.ts";

const PREFIX = 'admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request: ';
const ids = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `VirtualMachine/vm-${String(i + 1).padStart(2, "0")}`);

describe("blocker ids", () => {
  it("reads Kind/name and Kind/namespace/name, refuses the rest", () => {
    assert.deepEqual(parseBlockerId("VirtualMachine/vm-1"), { kind: "VirtualMachine", name: "vm-1" });
    assert.deepEqual(parseBlockerId("VirtualMachine/ns/vm-1"), {
      kind: "VirtualMachine",
      namespace: "ns",
      name: "vm-1",
    });
    assert.equal(parseBlockerId("vm-1"), undefined);
    assert.equal(parseBlockerId("a/b/c/d"), undefined);
    assert.equal(parseBlockerId("A//b"), undefined);
  });
});

describe("refusal message fallback", () => {
  it("reads the webhook's own message, past the cap of ten with the total", () => {
    // The webhook's message function itself, so a change in its wording fails here.
    const msg = denyMessage({ resource: "vpcs", name: "my-vpc", namespace: "default" } as never, ids(12), true);
    const r = blockersFromMessage(msg);
    assert.equal(r.blockers.length, 10);
    assert.equal(r.total, 12);
    assert.equal(r.atLeast, false);
  });
  it("says when the webhook stopped counting", () => {
    const msg = denyMessage({ resource: "vpcs", name: "my-vpc" } as never, ids(11), false);
    assert.equal(blockersFromMessage(msg).atLeast, true);
  });
  it("finds nothing in other messages", () => {
    assert.deepEqual(blockersFromMessage("dependency webhook is starting"), { blockers: [], atLeast: false });
  });
});

describe("parseRefusal", () => {
  const status = (message: string, causes?: unknown[]): unknown => ({
    kind: "Status",
    code: 409,
    reason: "Conflict",
    message: PREFIX + message,
    ...(causes ? { details: { causes } } : {}),
  });

  it("prefers causes: every blocker with its field, complete when all are there", () => {
    const all = ids(12);
    const msg = `cannot delete vpcs/my-vpc: still referenced by ${all.slice(0, 10).join(", ")} and 2 more`;
    const causes = all.map((id) => ({ reason: "ReferencedBy", message: id, field: ".spec.vpcRef.name" }));
    const r = parseRefusal(status(msg, [...causes, { reason: "Other", message: "x/y" }]));
    assert.equal(r.source, "causes");
    assert.equal(r.webhook, "dependency-controller.dependencies.opendefense.cloud");
    assert.equal(r.blockers.length, 12);
    assert.deepEqual(r.blockers[11], { kind: "VirtualMachine", name: "vm-12", field: ".spec.vpcRef.name" });
    assert.equal(r.total, 12);
    assert.equal(r.complete, true);
  });

  it("causes fewer than the message's count are incomplete", () => {
    const msg = `cannot delete vpcs/v: still referenced by ${ids(10).join(", ")} and 5 more`;
    const r = parseRefusal(
      status(
        msg,
        ids(12).map((m) => ({ reason: "ReferencedBy", message: m })),
      ),
    );
    assert.equal(r.complete, false);
    assert.equal(r.total, 15);
  });

  it("falls back to the message without causes, and says so", () => {
    const msg = `cannot delete vpcs/v: still referenced by ${ids(10).join(", ")} and 2 more`;
    const r = parseRefusal(status(msg));
    assert.equal(r.source, "message");
    assert.equal(r.blockers.length, 10);
    assert.equal(r.complete, false);
    assert.equal(r.blockers[0]?.field, undefined);
  });

  it("a refusal without blockers (503, 500) and a non-webhook error", () => {
    const r = parseRefusal({
      code: 503,
      reason: "ServiceUnavailable",
      message: PREFIX + "dependency webhook is starting",
    });
    assert.equal(r.source, "none");
    assert.equal(r.webhook, "dependency-controller.dependencies.opendefense.cloud");
    const plain = parseRefusal({ code: 404, reason: "NotFound", message: 'vpcs "x" not found' });
    assert.equal(plain.webhook, undefined);
    assert.deepEqual(parseRefusal("not json").blockers, []);
  });
});

describe("the one answer every command reads from a DELETE", () => {
  it("2xx allowed, 404 gone, anything else refused with the refusal read from a Status or from text", () => {
    assert.deepEqual(answerOf(200, {}), { outcome: "allowed" });
    assert.deepEqual(answerOf(404, { code: 404, message: "x" }), { outcome: "gone" });
    const webhook = answerOf(409, { code: 409, reason: "Conflict", message: `${PREFIX}still referenced by VM/a` });
    assert.ok(webhook.outcome === "refused" && webhook.status === 409);
    assert.deepEqual(webhook.refusal.blockers, [{ kind: "VM", name: "a" }]);
    const text = answerOf(502, "  <html>bad gateway</html>\n");
    assert.ok(text.outcome === "refused" && text.refusal.message === "<html>bad gateway</html>");
    assert.equal(text.refusal.code, 502);
  });
});
