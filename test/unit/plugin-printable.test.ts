// The plugin prints what other tenants wrote (refusals, status messages, blocker names, finalizers) with every control
// and bidi character escaped, in every text output; its own line breaks stay, a tenant's do not; JSON stays the same
// JSON value with nothing raw a terminal acts on.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { toDot, toJson, toMermaid } from "../../src/plugin/graph.ts";
import { checkReport, notReadyRules } from "../../src/plugin/commands/check/report.ts";
import { run } from "../../src/plugin/main.ts";
import { failed } from "../../src/plugin/output.ts";
import { objectGraph, type Reference } from "../../src/plugin/references.ts";
import { answerOf } from "../../src/plugin/causes.ts";
import { PluginError } from "../../src/plugin/session.ts";
import { renderTable } from "../../src/plugin/table.ts";
import { planTeardown, type PlanObject } from "../../src/plugin/commands/teardown/plan.ts";
import { planJson, planTable } from "../../src/plugin/commands/teardown/render.ts";
import { reportJson, reportText } from "../../src/plugin/commands/teardown/report.ts";
import { verdictFor, type VerifyObject, type VerifyReport } from "../../src/plugin/commands/verify/compare.ts";
import { renderJson, renderText } from "../../src/plugin/commands/verify/render.ts";
import { whyResult, type WhyTarget } from "../../src/plugin/commands/why/report.ts";
import { printable } from "../../src/util/printable.ts";
import { writeFakeKubeconfig } from "../support/fake-kubeconfig.ts";

/** Clears the screen, hides a link, overwrites with \r and backspace, reverses with RLO, forges a line. */
const EVIL = "x\x1b[2J\x1b]8;;http://evil.test/\x07click\x1b]8;;\x07\rok\b\u0085\u202eevil\nforged line";
const SHOWN = printable(EVIL);
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Text output: no raw control or bidi character but the plugin's own line breaks, and the tenant's text escaped. */
function assertShownEscaped(text: string, shown = SHOWN): void {
  assert.ok(!RAW.test(text), `raw control character in: ${JSON.stringify(text)}`);
  assert.ok(text.includes(shown), `escaped text missing from: ${text}`);
  assert.ok(!text.split("\n").some((line) => line.startsWith("forged line")), "a tenant's newline made a line");
}

/** JSON output: nothing raw a terminal acts on, and the tenant's text comes back whole. */
function assertJsonEscaped(text: string, find: (doc: unknown) => unknown): void {
  assert.ok(!RAW.test(text), `raw control character in: ${JSON.stringify(text)}`);
  assert.equal(find(JSON.parse(text)), EVIL);
}

describe("the plugin's text outputs escape what tenants wrote", () => {
  it("tables: every cell, one line each", () => {
    const text = renderTable(["name", "message"], [["vm-1", EVIL]]);
    assertShownEscaped(text);
    assert.equal(text.split("\n").length, 3);
  });

  const target: WhyTarget = {
    resource: { group: "network.test.io", version: "v1", name: "vpcs", kind: "VPC", namespaced: true },
    name: "my-vpc",
    namespace: "default",
    workspace: "root:consumer1",
  };

  it("why: another webhook's refusal, its name and reason; blockers from causes; kcp's error text", () => {
    const other = {
      code: 403,
      reason: `Forbidden${EVIL}`,
      message: `admission webhook "hook${EVIL}" denied the request: ${EVIL}`,
    };
    const refusal = whyResult(target, answerOf(403, other));
    assert.equal(refusal.exitCode, 1);
    assertShownEscaped(refusal.text);
    assert.ok(refusal.text.includes(`admission webhook "hook${SHOWN}"`));
    assert.ok(refusal.text.includes(`(403 Forbidden${SHOWN})`));
    const blockers = {
      code: 409,
      reason: "Conflict",
      message: 'admission webhook "w" denied the request: cannot delete vpcs/my-vpc: still referenced by X/y',
      details: { causes: [{ reason: "ReferencedBy", message: `Virtual\x1bMachine/vm\r1`, field: `.spec${EVIL}` }] },
    };
    const listed = whyResult(target, answerOf(409, blockers)).text;
    assertShownEscaped(listed);
    assert.match(listed, /kubectl delete virtual\\x1bmachine vm\\r1 -n default/);
    const failedAsk = whyResult(target, answerOf(500, { code: 500, reason: "InternalError", message: EVIL }));
    assert.equal(failedAsk.exitCode, 2);
    assertShownEscaped(failedAsk.text);
  });

  it("check: a rule's status message, and the names in a dangling reference", () => {
    const notReady = notReadyRules([
      {
        workspace: "root:compute",
        object: {
          metadata: { name: "vm" },
          status: { conditions: [{ type: "Ready", status: "False", message: EVIL }] },
        },
      },
    ]);
    const ref: Reference = {
      from: { group: "g", resource: "vms", kind: "VirtualMachine", namespace: "default", name: EVIL },
      to: { group: "n", resource: "vpcs", kind: "VPC", namespace: "default", name: "gone" },
      field: ".spec.vpcRef.name",
      rule: "root:compute:vm",
      state: "missing",
    };
    const text = checkReport("root:consumer1", [ref], notReady);
    assertShownEscaped(text, `VirtualMachine/${SHOWN}`);
    assert.ok(
      text.split("\n").some((line) => /^root:compute\s+vm\s+False\s+NoStatus\s+/.test(line) && line.endsWith(SHOWN)),
      text,
    );
  });

  const ref: Reference = {
    from: { group: "g", resource: "vms", kind: "VirtualMachine", namespace: "default", name: EVIL },
    to: { group: "n", resource: "vpcs", kind: "VPC", namespace: "default", name: "v" },
    field: ".spec.vpcRef.name",
    rule: "root:compute:vm",
    state: "exists",
  };

  it("graph: Mermaid and dot labels and ids; JSON round-trips the names", () => {
    const graph = objectGraph([ref]);
    const mermaid = toMermaid(graph);
    assert.ok(!RAW.test(mermaid), mermaid);
    assert.ok(mermaid.includes(`VirtualMachine default/${SHOWN.replace(/"/g, "#quot;")}`), mermaid);
    const dot = toDot(graph);
    assert.ok(!RAW.test(dot), dot);
    // dot's own quoting doubles the backslash of the escape: `\\x1b` in the source draws `\x1b`.
    assert.ok(dot.includes("x\\\\x1b[2J"), dot);
    assert.ok(!dot.split("\n").some((line) => line.startsWith("forged line")));
    const json = toJson(graph);
    assertJsonEscaped(json, (doc) => {
      const node = (doc as { nodes: { label: string }[] }).nodes.find((n) => n.label.startsWith("VirtualMachine"));
      return node?.label.replace("VirtualMachine default/", "");
    });
  });

  const vpc: VerifyObject = {
    group: "n",
    resource: "vpcs",
    kind: "VPC",
    namespace: "default",
    name: "v",
    skipProtection: false,
  };

  it("verify: kcp's message for an object it could not verify, in text and JSON", () => {
    const v = verdictFor(vpc, [], answerOf(503, { code: 503, message: EVIL }));
    assert.ok(!v.ok && "unverified" in v);
    const report: VerifyReport = {
      workspace: "root:consumer1",
      rules: ["root:compute:vm"],
      checked: 1,
      referenced: 0,
      mismatches: [],
      unverified: [v.unverified],
    };
    assertShownEscaped(renderText(report));
    assertJsonEscaped(
      renderJson(report),
      (doc) => (doc as { unverified: { message: string }[] }).unverified[0]?.message,
    );
  });

  const obj = (name: string, extra: Partial<PlanObject> = {}): PlanObject => ({
    id: `n/vpcs/default/${name}`,
    group: "n",
    version: "v1",
    resource: "vpcs",
    kind: "VPC",
    namespace: "default",
    name,
    finalizers: [],
    deleting: false,
    skipProtection: false,
    ...extra,
  });

  it("teardown: a refusal's text and a finalizer in the plan, the JSON and the run's report", () => {
    const stuck = obj("a", { finalizers: [`fin${EVIL}`] });
    const plan = planTeardown([stuck], [], new Map([[stuck.id, { refused: EVIL }]]));
    const ctx = { workspace: "root:consumer1", namespace: "default" };
    const table = planTable(plan, ctx);
    assertShownEscaped(table);
    assert.ok(table.includes(`fin${SHOWN}`));
    assertJsonEscaped(planJson(plan, ctx), (doc) => (doc as { stuck: { detail: string }[] }).stuck[0]?.detail);
    const run = {
      ok: false,
      deleted: 0,
      refusedDeletes: 0,
      waves: [],
      elapsedMs: 1000,
      problem: `n/vpcs/default/a: ${EVIL}`,
      plan,
      left: [{ ...stuck, deleting: true, finalizers: [EVIL] }],
      blockedBy: new Map(),
      failures: new Map(),
    };
    assertShownEscaped(reportText(run, ctx, 0));
    assertJsonEscaped(
      reportJson(run, ctx, 0),
      (doc) => (doc as { left: { finalizers: string[] }[] }).left[0]?.finalizers[0],
    );
  });

  it("errors: one line on stderr, however many lines the message has", () => {
    const err: string[] = [];
    assert.equal(
      failed(new PluginError(`cannot list: ${EVIL}`), { out: () => undefined, err: (t) => err.push(t) }, {}),
      2,
    );
    assertShownEscaped(err.join(""));
    assert.equal(err.join("").split("\n").length, 2);
  });
});

describe("the plugin's notes escape kcp's answers (through run, against a kcp stand-in)", () => {
  let server: http.Server;
  let removeKubeconfig = (): void => undefined;
  let kubeconfig: string;

  before(async () => {
    server = http.createServer((req, res) => {
      const json = (code: number, body: unknown): void => {
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      // Listing the workspaces below root fails with a message someone else controls; root holds no rules.
      if (req.url?.startsWith("/clusters/root/apis/tenancy.kcp.io/"))
        return json(500, { kind: "Status", code: 500, reason: "InternalError", message: EVIL });
      json(404, { kind: "Status", code: 404, reason: "NotFound", message: "not found" });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const written = writeFakeKubeconfig("plugin-printable-", `http://127.0.0.1:${port}/clusters/root:consumer1`);
    kubeconfig = written.kubeconfig;
    removeKubeconfig = written.remove;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
    removeKubeconfig();
  });

  it("check: the note on a workspace list that failed quotes kcp's message escaped", async () => {
    const err: string[] = [];
    const code = await run(["check", `--kubeconfig=${kubeconfig}`], { out: () => undefined, err: (t) => err.push(t) });
    assert.equal(code, 2);
    const notes = err.join("");
    assert.match(notes, /^note: cannot list the workspaces in root: 500 InternalError: /m);
    assertShownEscaped(notes);
  });
});
