// why on an object that is being deleted, pure: the finalizer owner table (first match wins, domains match whole
// labels), ages from an injected clock, dependents by ownerReference uid, a namespace's content by type, and the text
// and JSON reports with their exit codes next to the refusal case's.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { answerOf } from "../../src/plugin/causes.ts";
import { age, finalizerOwner, UNKNOWN_OWNER } from "../../src/plugin/finalizers.ts";
import { whyReport, type WhyDocument, type WhyTarget } from "../../src/plugin/commands/why/report.ts";
import {
  contentsOf,
  dependentsOf,
  objectStateOf,
  terminatingOf,
  type Listed,
} from "../../src/plugin/commands/why/terminating.ts";

const NOW = Date.parse("2026-11-28T06:00:00Z");
const SINCE = "2026-11-28T05:58:55Z"; // 65 s before NOW

const vmTarget: WhyTarget = {
  resource: {
    group: "compute.test.io",
    version: "v1",
    name: "virtualmachines",
    kind: "VirtualMachine",
    namespaced: true,
  },
  name: "held-vm",
  namespace: "default",
  workspace: "root:consumer1",
};

const heldVm = (finalizers: string[], extra: Record<string, unknown> = {}): unknown => ({
  metadata: { name: "held-vm", namespace: "default", uid: "u-vm", deletionTimestamp: SINCE, finalizers, ...extra },
});

const refused = {
  kind: "Status",
  code: 409,
  reason: "Conflict",
  message: 'admission webhook "w.example" denied the request: cannot delete x: still referenced by Gadget/g-1',
  details: { causes: [{ reason: "ReferencedBy", message: "Gadget/g-1", field: ".spec.vmRef.name" }] },
};

describe("finalizer owners", () => {
  const cases: [string, string][] = [
    ["syncagent.kcp.io/cleanup", "api-syncagent"],
    ["core.kcp.io/logicalcluster", "kcp (the workspace controller)"],
    ["core.kcp.io/logicalcluster-deletion", "kcp (the logical cluster deletion controller)"],
    ["apis.kcp.io/apibinding-finalizer", "kcp"],
    ["tenancy.kcp.io/whatever", "kcp"],
    ["kcp.io/bare", "kcp"],
    ["kubernetes", "Kubernetes (the namespace controller)"],
    ["foregroundDeletion", "Kubernetes (the garbage collector)"],
    ["orphan", "Kubernetes (the garbage collector)"],
    ["kubernetes.io/pvc-protection", "Kubernetes"],
    ["batch.kubernetes.io/job-tracking", "Kubernetes"],
    // A domain matches whole labels only, and a name without a slash matches no domain.
    ["notkcp.io/x", UNKNOWN_OWNER],
    ["kcp.io.evil.example/x", UNKNOWN_OWNER],
    ["syncagent.kcp.io", UNKNOWN_OWNER],
    ["example.com/hold", UNKNOWN_OWNER],
    ["Kubernetes", UNKNOWN_OWNER],
  ];
  for (const [name, owner] of cases) it(`${name} → ${owner}`, () => assert.equal(finalizerOwner(name).owner, owner));
  it("api-syncagent's entry wins over kcp's domain, and says when it goes", () => {
    assert.match(finalizerOwner("syncagent.kcp.io/cleanup").note ?? "", /service cluster/);
    assert.equal(finalizerOwner("example.com/hold").note, undefined);
  });
});

describe("terminating state", () => {
  it("ages as kubectl shows them: the two largest units", () => {
    assert.deepEqual([0, 42, 65, 120, 3600, 3725, 86400, 90061].map(age), [
      "0s",
      "42s",
      "1m5s",
      "2m",
      "1h",
      "1h2m",
      "1d",
      "1d1h",
    ]);
  });

  it("since and age come from the deletionTimestamp and the injected clock; no timestamp, no explanation", () => {
    const t = terminatingOf(objectStateOf(heldVm(["example.com/hold"])), NOW)!;
    assert.equal(t.since, SINCE);
    assert.equal(t.ageSeconds, 65);
    assert.deepEqual(t.finalizers, [{ name: "example.com/hold", in: "metadata", owner: UNKNOWN_OWNER }]);
    assert.equal(terminatingOf(objectStateOf({ metadata: { name: "x" } }), NOW), undefined);
    const bad = terminatingOf(objectStateOf({ metadata: { name: "x", deletionTimestamp: "yesterday" } }), NOW)!;
    assert.equal(bad.ageSeconds, undefined);
    // A clock behind the timestamp (skew) says 0s, not a negative age.
    assert.equal(terminatingOf(objectStateOf(heldVm([])), NOW - 600_000)!.ageSeconds, 0);
  });

  it("a namespace's spec.finalizers hold it too; malformed fields read as absent", () => {
    const ns = objectStateOf({
      metadata: { name: "team-a", deletionTimestamp: SINCE, finalizers: "not-a-list", ownerReferences: [7] },
      spec: { finalizers: ["kubernetes"] },
      status: {
        phase: "Terminating",
        conditions: [{ status: "True" }, { type: "NamespaceContentRemaining", status: "True" }],
      },
    });
    const t = terminatingOf(ns, NOW)!;
    assert.deepEqual(
      t.finalizers.map((f) => `${f.name}@${f.in}`),
      ["kubernetes@spec"],
    );
    assert.deepEqual(t.conditions, [{ type: "NamespaceContentRemaining", status: "True" }]);
    assert.equal(t.phase, "Terminating");
    assert.deepEqual(t.ownerReferences, []);
  });

  const listings: Listed[] = [
    {
      type: { group: "", name: "configmaps", kind: "ConfigMap" },
      items: [
        {
          metadata: { name: "cm", namespace: "default", ownerReferences: [{ uid: "u-vm", blockOwnerDeletion: true }] },
        },
        { metadata: { name: "other", namespace: "default", ownerReferences: [{ uid: "u-else" }] } },
      ],
    },
    {
      type: { group: "compute.test.io", name: "disks", kind: "Disk" },
      items: [
        {
          metadata: {
            name: "d-1",
            namespace: "default",
            deletionTimestamp: SINCE,
            finalizers: ["example.com/hold"],
            ownerReferences: [{ uid: "u-vm" }],
          },
        },
        { metadata: {} },
        "junk",
      ],
    },
  ];

  it("dependents are the objects whose ownerReferences name the uid, with whether they block", () => {
    assert.deepEqual(dependentsOf("u-vm", listings), [
      {
        type: "configmaps",
        kind: "ConfigMap",
        namespace: "default",
        name: "cm",
        deleting: false,
        finalizers: [],
        blocksOwnerDeletion: true,
      },
      {
        type: "disks.compute.test.io",
        kind: "Disk",
        namespace: "default",
        name: "d-1",
        deleting: true,
        finalizers: ["example.com/hold"],
        blocksOwnerDeletion: false,
      },
    ]);
    assert.equal(contentsOf(listings).length, 3, "every named object, unnamed and junk items left out");
  });
});

describe("why report for a Terminating object", () => {
  const t = terminatingOf(objectStateOf(heldVm(["syncagent.kcp.io/cleanup", "example.com/hold"])), NOW)!;

  it("text: since when, each finalizer with its usual owner; exit 1 even when a delete is allowed", () => {
    const r = whyReport({ target: vmTarget, answer: answerOf(200, {}), terminating: t });
    assert.equal(r.exitCode, 1);
    assert.match(
      r.text,
      /^virtualmachines\/held-vm \(root:consumer1, namespace default\): being deleted since 2026-11-28T05:58:55Z \(1m5s ago\), and still here\.$/m,
    );
    assert.match(r.text, /held by 2 finalizers:/);
    assert.match(r.text, /syncagent\.kcp\.io\/cleanup\s+api-syncagent\s+removed once the agent/);
    assert.match(r.text, /example\.com\/hold\s+unknown owner, ask whoever set it/);
    assert.doesNotMatch(r.text, /can be deleted now|REFUSED/);
  });

  it("text: a refusal of the dry run follows, as in the refusal case", () => {
    const r = whyReport({ target: vmTarget, answer: answerOf(409, refused), terminating: t });
    assert.equal(r.exitCode, 1);
    assert.ok(r.text.indexOf("held by 2 finalizers") < r.text.indexOf("a delete would be REFUSED now"), r.text);
    assert.match(r.text, /Gadget\s+default\s+g-1\s+\.spec\.vmRef\.name/);
  });

  it("a dry run that could not be asked is a note; an object gone meanwhile is not found (exit 2)", () => {
    const r = whyReport({
      target: vmTarget,
      answer: answerOf(403, { code: 403, reason: "Forbidden", message: "no" }),
      terminating: t,
    });
    assert.equal(r.exitCode, 1);
    assert.match(r.notes?.[0] ?? "", /^could not ask whether a delete would be refused: you may not delete/);
    const gone = whyReport({ target: vmTarget, answer: { outcome: "gone" }, terminating: t });
    assert.equal(gone.exitCode, 2);
    assert.match(gone.text, /not found/);
  });

  it("json: verdict, exit code, finalizers with owners, the refusal's blockers", () => {
    const doc = JSON.parse(
      whyReport({ target: vmTarget, answer: answerOf(409, refused), terminating: t }, "json").text,
    ) as WhyDocument;
    assert.equal(doc.verdict, "terminating");
    assert.equal(doc.exitCode, 1);
    assert.deepEqual(doc.object, {
      group: "compute.test.io",
      resource: "virtualmachines",
      kind: "VirtualMachine",
      namespace: "default",
      name: "held-vm",
      workspace: "root:consumer1",
    });
    assert.equal(doc.terminating!.since, SINCE);
    assert.equal(doc.terminating!.ageSeconds, 65);
    assert.deepEqual(
      doc.terminating!.finalizers.map((f) => [f.name, f.owner]),
      [
        ["syncagent.kcp.io/cleanup", "api-syncagent"],
        ["example.com/hold", UNKNOWN_OWNER],
      ],
    );
    assert.deepEqual(doc.refusal!.blockers, [
      { kind: "Gadget", namespace: "default", name: "g-1", field: ".spec.vmRef.name" },
    ]);
  });

  it("json without a deletionTimestamp: the refusal case's verdicts and exit codes", () => {
    const refusedDoc = JSON.parse(
      whyReport({ target: vmTarget, answer: answerOf(409, refused) }, "json").text,
    ) as WhyDocument;
    assert.deepEqual([refusedDoc.verdict, refusedDoc.exitCode, refusedDoc.terminating], ["refused", 1, null]);
    const free = whyReport({ target: vmTarget, answer: answerOf(200, {}) }, "json");
    assert.deepEqual([(JSON.parse(free.text) as WhyDocument).verdict, free.exitCode], ["deletable", 0]);
    // No answer is one line for stderr in either format, never a JSON document.
    const gone = whyReport({ target: vmTarget, answer: { outcome: "gone" } }, "json");
    assert.equal(gone.exitCode, 2);
    assert.throws(() => JSON.parse(gone.text));
  });

  it("a namespace: its conditions and the objects left by type, with what holds each", () => {
    const nsTarget: WhyTarget = {
      resource: { group: "", version: "v1", name: "namespaces", kind: "Namespace", namespaced: false },
      name: "team-a",
      workspace: "root:consumer1",
    };
    const state = objectStateOf({
      metadata: { name: "team-a", deletionTimestamp: SINCE },
      spec: { finalizers: ["kubernetes"] },
      status: {
        phase: "Terminating",
        conditions: [
          {
            type: "NamespaceFinalizersRemaining",
            status: "True",
            reason: "SomeFinalizersRemain",
            message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
          },
        ],
      },
    });
    const vms = Array.from({ length: 7 }, (_, i) => ({ metadata: { name: `vm-${i}`, namespace: "team-a" } }));
    const contents = contentsOf([
      { type: { group: "compute.test.io", name: "virtualmachines", kind: "VirtualMachine" }, items: vms },
      {
        type: { group: "compute.test.io", name: "disks", kind: "Disk" },
        items: [
          { metadata: { name: "d", namespace: "team-a", deletionTimestamp: SINCE, finalizers: ["example.com/hold"] } },
        ],
      },
    ]);
    const r = whyReport({
      target: nsTarget,
      answer: answerOf(200, {}),
      terminating: terminatingOf(state, NOW, { contents })!,
    });
    assert.equal(r.exitCode, 1);
    assert.match(r.text, /being deleted since .*, and still here, phase Terminating\./);
    assert.match(r.text, /kubernetes \(spec\.finalizers\)\s+Kubernetes \(the namespace controller\)/);
    assert.match(r.text, /NamespaceFinalizersRemaining\s+True\s+SomeFinalizersRemain\s+Some content/);
    assert.match(r.text, /objects still in the namespace \(8, of the types you may list\):/);
    assert.match(r.text, /disks\.compute\.test\.io\s+1\s+d \(deleting; example\.com\/hold\)/);
    assert.match(r.text, /virtualmachines\.compute\.test\.io\s+7\s+vm-0, vm-1, vm-2, vm-3, vm-4, and 2 more/);
  });

  it("other writers' text is printable: a finalizer or condition cannot write to the terminal", () => {
    const evil = "example.com/x\u001b[2J\u202e";
    const s = terminatingOf(objectStateOf(heldVm([evil])), NOW)!;
    const text = whyReport({ target: vmTarget, answer: answerOf(200, {}), terminating: s }).text;
    assert.doesNotMatch(text, /[\u001b\u202e]/);
    assert.match(text, /example\.com\/x\\x1b\[2J\\u202e/);
  });
});
