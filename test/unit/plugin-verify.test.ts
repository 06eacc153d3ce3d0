// kubectl dependencies verify's comparison: what the rules expect to block an object against what a dry-run DELETE
// answered (allowed, refused naming blockers, or neither), the second look, the exit code, the JSON and the flags.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WEBHOOK_NAME } from "../../src/api/types.ts";
import { parseArgs } from "../../src/plugin/main.ts";
import { answerOf } from "../../src/plugin/causes.ts";
import { objectId } from "../../src/plugin/objects.ts";
import type { Reference } from "../../src/plugin/references.ts";
import {
  blockerKey,
  confirmed,
  exitCodeOf,
  expectedByObject,
  verdictFor,
  type ExpectedBlocker,
  type Verdict,
  type VerifyObject,
  type VerifyReport,
} from "../../src/plugin/commands/verify/compare.ts";
import { renderJson, renderText } from "../../src/plugin/commands/verify/render.ts";

const RULE = "root:compute-provider:vm-dependencies";
const vpc = (name: string, extra: Partial<VerifyObject> = {}): VerifyObject => ({
  group: "network.test.io",
  resource: "vpcs",
  kind: "VPC",
  namespace: "default",
  name,
  skipProtection: false,
  ...extra,
});
const vmBlocker = (name: string, namespace = "default"): ExpectedBlocker => ({
  kind: "VirtualMachine",
  namespace,
  name,
  field: ".spec.vpcRef.name",
  rule: RULE,
});

/** A refusal as kcp passes the webhook's on: the message names ten, causes list every blocker. */
function refused(target: string, ids: string[], opts: { total?: number; webhook?: string } = {}) {
  const more = (opts.total ?? ids.length) - Math.min(ids.length, 10);
  const listed = ids.slice(0, 10).join(", ") + (more > 0 ? ` and ${more} more` : "");
  return answerOf(409, {
    kind: "Status",
    code: 409,
    reason: "Conflict",
    message: `admission webhook "${opts.webhook ?? WEBHOOK_NAME}" denied the request: cannot delete ${target}: still referenced by ${listed}`,
    details: { causes: ids.map((id) => ({ reason: "ReferencedBy", message: id, field: ".spec.vpcRef.name" })) },
  });
}

describe("verify: one object's expected blockers against the dry run", () => {
  it("allowed and not referenced, or refused naming exactly the expected blockers: ok", () => {
    assert.deepEqual(verdictFor(vpc("free"), [], { outcome: "allowed" }), { ok: true });
    const answer = refused("vpcs/v", ["VirtualMachine/vm-1", "VirtualMachine/vm-2"]);
    assert.deepEqual(verdictFor(vpc("v"), [vmBlocker("vm-2"), vmBlocker("vm-1")], answer), { ok: true });
  });

  it("allowed while the rules say it is referenced: unprotected, every expected blocker missing", () => {
    const v = verdictFor(vpc("v"), [vmBlocker("vm-1")], { outcome: "allowed" });
    assert.ok(!v.ok && "mismatch" in v);
    assert.equal(v.mismatch.kind, "unprotected");
    assert.deepEqual(v.mismatch.missing, [vmBlocker("vm-1")]);
    assert.deepEqual(v.mismatch.answer, { status: 200 });
    assert.match(renderText(report([v])), /vpcs\.network\.test\.io\/v\s+unprotected\s+a delete would be ALLOWED/);
  });

  it("a blocker no rule explains is stale; an expected one not named is missing; both differ", () => {
    const stale = verdictFor(
      vpc("v"),
      [vmBlocker("vm-1")],
      refused("vpcs/v", ["VirtualMachine/vm-1", "VirtualMachine/gone"]),
    );
    assert.ok(!stale.ok && "mismatch" in stale);
    assert.equal(stale.mismatch.kind, "stale-blockers");
    assert.deepEqual(
      stale.mismatch.unexplained.map((b) => b.name),
      ["gone"],
    );
    const missing = verdictFor(
      vpc("v"),
      [vmBlocker("vm-1"), vmBlocker("vm-2")],
      refused("vpcs/v", ["VirtualMachine/vm-1"]),
    );
    assert.ok(!missing.ok && "mismatch" in missing);
    assert.equal(missing.mismatch.kind, "missing-blockers");
    assert.deepEqual(missing.mismatch.missing, [vmBlocker("vm-2")]);
    const differ = verdictFor(vpc("v"), [vmBlocker("vm-1")], refused("vpcs/v", ["VirtualMachine/other"]));
    assert.ok(!differ.ok && "mismatch" in differ);
    assert.equal(differ.mismatch.kind, "blockers-differ");
    const free = verdictFor(vpc("free"), [], refused("vpcs/free", ["VirtualMachine/ghost"]));
    assert.ok(!free.ok && "mismatch" in free && free.mismatch.kind === "stale-blockers");
  });

  it("a refusal that lists only some blockers (past the cap) is not missing the rest", () => {
    const want = Array.from({ length: 12 }, (_, i) => vmBlocker(`vm-${i}`));
    const answer = refused("vpcs/v", ["VirtualMachine/vm-0", "VirtualMachine/vm-1"], { total: 12 });
    assert.deepEqual(verdictFor(vpc("v"), want, answer), { ok: true });
  });

  it("skip-protection: allowed is right even when referenced; a refusal is stale", () => {
    const skip = vpc("v", { skipProtection: true });
    assert.deepEqual(verdictFor(skip, [vmBlocker("vm-1")], { outcome: "allowed" }), { ok: true });
    const v = verdictFor(skip, [vmBlocker("vm-1")], refused("vpcs/v", ["VirtualMachine/vm-1"]));
    assert.ok(!v.ok && "mismatch" in v && v.mismatch.kind === "stale-blockers");
  });

  it("503, RBAC or another webhook: unverified, with kcp's message", () => {
    const busy = answerOf(503, {
      code: 503,
      reason: "ServiceUnavailable",
      message: `admission webhook "${WEBHOOK_NAME}" denied the request: cannot check vpcs/v yet`,
    });
    const v = verdictFor(vpc("v"), [vmBlocker("vm-1")], busy);
    assert.ok(!v.ok && "unverified" in v);
    assert.equal(v.unverified.status, 503);
    assert.match(v.unverified.message, /cannot check vpcs\/v yet/);
    const other = verdictFor(
      vpc("v"),
      [vmBlocker("vm-1")],
      refused("vpcs/v", ["VirtualMachine/vm-1"], { webhook: "other.example" }),
    );
    assert.ok(!other.ok && "unverified" in other);
    const text = verdictFor(vpc("v"), [], answerOf(502, "<html>bad gateway</html>"));
    assert.ok(!text.ok && "unverified" in text && text.unverified.message === "<html>bad gateway</html>");
  });

  it("a cluster-scoped object's blockers carry their namespace, as the webhook writes them", () => {
    const zone = { group: "network.test.io", resource: "zones", kind: "Zone", name: "z", skipProtection: false };
    assert.equal(
      blockerKey({ kind: "VirtualMachine", namespace: "team-a", name: "vm" }, zone),
      "VirtualMachine/team-a/vm",
    );
    assert.equal(
      blockerKey({ kind: "VirtualMachine", namespace: "default", name: "vm" }, vpc("v")),
      "VirtualMachine/vm",
    );
    const answer = refused("zones/z", ["VirtualMachine/team-a/vm"]);
    assert.deepEqual(verdictFor(zone, [vmBlocker("vm", "team-a")], answer), { ok: true });
  });
});

describe("verify: expectations, the second look, the exit code and the JSON", () => {
  const ref = (to: string, from: string, state: Reference["state"] = "exists"): Reference => ({
    from: {
      group: "compute.test.io",
      resource: "virtualmachines",
      kind: "VirtualMachine",
      namespace: "default",
      name: from,
    },
    to: { group: "network.test.io", resource: "vpcs", kind: "VPC", namespace: "default", name: to },
    field: ".spec.vpcRef.name",
    rule: RULE,
    state,
  });

  it("only references to objects that exist expect a blocker", () => {
    const m = expectedByObject([ref("a", "vm-1"), ref("a", "vm-2"), ref("missing", "vm-3", "missing")]);
    assert.deepEqual([...m.keys()], [objectId(vpc("a"))]);
    assert.deepEqual(m.get(objectId(vpc("a"))), [vmBlocker("vm-1"), vmBlocker("vm-2")]);
  });

  it("keeps only the findings the second pass confirms", () => {
    const first: Verdict[] = [
      verdictFor(vpc("race"), [vmBlocker("vm-1")], { outcome: "allowed" }),
      verdictFor(vpc("broken"), [vmBlocker("vm-2")], { outcome: "allowed" }),
    ];
    const second = new Map<string, Verdict>([
      [objectId(vpc("race")), { ok: true }],
      [objectId(vpc("broken")), verdictFor(vpc("broken"), [vmBlocker("vm-2")], { outcome: "allowed" })],
    ]);
    const kept = confirmed(first, second);
    assert.deepEqual(
      kept.map((v) => ("mismatch" in v ? v.mismatch.object.name : "")),
      ["broken"],
    );
  });

  it("exit 1 on a mismatch, else 2 when something could not be verified, else 0; JSON says passed", () => {
    const mismatch = verdictFor(vpc("v"), [vmBlocker("vm-1")], { outcome: "allowed" });
    const unverified = verdictFor(vpc("w"), [], answerOf(503, "busy"));
    assert.equal(exitCodeOf(report([mismatch, unverified])), 1);
    assert.equal(exitCodeOf(report([unverified])), 2);
    assert.equal(exitCodeOf(report([])), 0);
    const json = JSON.parse(renderJson(report([mismatch]))) as Record<string, unknown>;
    assert.deepEqual(Object.keys(json), [
      "workspace",
      "rules",
      "checked",
      "referenced",
      "mismatches",
      "unverified",
      "passed",
      "exitCode",
    ]);
    assert.equal(json["passed"], false);
    assert.equal(json["exitCode"], 1);
    const [m] = json["mismatches"] as Record<string, unknown>[];
    assert.deepEqual(Object.keys(m ?? {}), ["kind", "object", "expected", "missing", "unexplained", "answer"]);
    assert.match(renderText(report([])), /no mismatches/);
  });

  it("the command line: verify, -o json, --rule-workspace; -o dot is refused", () => {
    assert.deepEqual(parseArgs(["verify", "-o", "json", "--rule-workspace", "root:c", "--workspace=root:x"]), {
      ok: true,
      command: { name: "verify", format: "json", ruleWorkspaces: ["root:c"], connection: { workspace: "root:x" } },
    });
    assert.deepEqual(parseArgs(["verify"]), {
      ok: true,
      command: { name: "verify", format: "text", ruleWorkspaces: [], connection: {} },
    });
    const bad = parseArgs(["verify", "-o", "dot"]);
    assert.ok(!bad.ok && /-o dot: the output format is one of text, json/.test(bad.error));
  });
});

function report(verdicts: Verdict[]): VerifyReport {
  return {
    workspace: "root:consumer1",
    rules: [RULE],
    checked: 3,
    referenced: 2,
    mismatches: verdicts.flatMap((v) => (!v.ok && "mismatch" in v ? [v.mismatch] : [])),
    unverified: verdicts.flatMap((v) => (!v.ok && "unverified" in v ? [v.unverified] : [])),
  };
}
