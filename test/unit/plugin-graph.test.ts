// The plugin's pure parts beyond the arguments: the type and object graphs with cycles, their renderings, dangling
// references, resource matching, tables and the why report.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import { matchResource, resourcesOf } from "../../src/plugin/discovery.ts";
import {
  markCycles,
  toDot,
  toJson,
  toMermaid,
  typeGraph,
  type GraphEdge,
  type GraphNode,
  type RuleInWorkspace,
} from "../../src/plugin/graph.ts";
import { checkReport, notReadyRules } from "../../src/plugin/commands/check/report.ts";
import { findReferences, objectGraph, type TypeListing } from "../../src/plugin/references.ts";
import { renderTable } from "../../src/plugin/table.ts";
import { answerOf } from "../../src/plugin/causes.ts";
import { rulesBehind, whyResult, type WhyTarget } from "../../src/plugin/commands/why/report.ts";

function rule(
  workspace: string,
  name: string,
  dependent: { group: string; resource: string; kind: string },
  deps: { path: string; group: string; resource: string; field: string }[],
): RuleInWorkspace {
  const parsed = parseRule({
    metadata: { name, annotations: { "kcp.io/cluster": `lc-${workspace}` } },
    spec: {
      dependent: { apiExportName: dependent.group, version: "v1", ...dependent },
      dependencies: deps.map((d) => ({
        apiExportRef: { path: d.path, name: d.group },
        group: d.group,
        version: "v1",
        resource: d.resource,
        fieldRef: { path: d.field },
      })),
    },
  });
  assert.ok(parsed && parsed.problems.length === 0, JSON.stringify(parsed?.problems));
  return { workspace, rule: parsed };
}

const VM = { group: "compute.test.io", resource: "virtualmachines", kind: "VirtualMachine" };
const VPC = { group: "network.test.io", resource: "vpcs", kind: "VPC" };
const vmRule = rule("root:compute", "vm-dependencies", VM, [
  { path: "root:network", group: "network.test.io", resource: "vpcs", field: ".spec.vpcRef.name" },
  { path: "root:network", group: "network.test.io", resource: "subnets", field: ".spec.subnetRef.name" },
]);
// VPCs depend on the VM that routes for them: a cycle across two providers.
const vpcRule = rule("root:network", "vpc-router", VPC, [
  { path: "root:compute", group: "compute.test.io", resource: "virtualmachines", field: ".spec.routerRef.name" },
]);

describe("type graph", () => {
  it("draws one edge per dependency, labelled with the field path, no cycle without one", () => {
    const g = typeGraph([vmRule]);
    assert.deepEqual(
      g.edges.map((e) => [e.from, e.to, e.fields, e.rules, e.onCycle]),
      [
        [
          "root:compute|virtualmachines.compute.test.io",
          "root:network|subnets.network.test.io",
          [".spec.subnetRef.name"],
          ["root:compute:vm-dependencies"],
          false,
        ],
        [
          "root:compute|virtualmachines.compute.test.io",
          "root:network|vpcs.network.test.io",
          [".spec.vpcRef.name"],
          ["root:compute:vm-dependencies"],
          false,
        ],
      ],
    );
    assert.deepEqual(g.cycles, []);
    assert.equal(g.nodes.find((n) => n.id.endsWith("virtualmachines.compute.test.io"))?.label, "VirtualMachine");
  });

  it("marks the edges and nodes of a cycle, and leaves the rest alone", () => {
    const g = typeGraph([vmRule, vpcRule]);
    assert.deepEqual(g.cycles, [["root:compute|virtualmachines.compute.test.io", "root:network|vpcs.network.test.io"]]);
    const onCycle = g.edges.filter((e) => e.onCycle).map((e) => e.fields[0]);
    assert.deepEqual(onCycle.sort(), [".spec.routerRef.name", ".spec.vpcRef.name"]);
    assert.equal(g.nodes.find((n) => n.id.endsWith("subnets.network.test.io"))?.onCycle, false);
    // The vpcs node learns its kind from the rule whose dependent it is.
    assert.equal(g.nodes.find((n) => n.id.endsWith("vpcs.network.test.io"))?.label, "VPC");
  });

  it("keeps the same group/resource of two providers apart", () => {
    const other = rule("root:other", "r", VM, [
      { path: "root:other-net", group: "network.test.io", resource: "vpcs", field: ".spec.vpcRef.name" },
    ]);
    assert.equal(typeGraph([vmRule, other]).nodes.length, 5);
  });
});

describe("markCycles", () => {
  const node = (id: string): GraphNode => ({ id, label: id, onCycle: false });
  const edge = (from: string, to: string): GraphEdge => ({ from, to, fields: [], rules: [], onCycle: false });
  it("finds self-loops and separate components; a long chain does not overflow the stack", () => {
    const n = 20_000;
    const nodes = Array.from({ length: n }, (_, i) => node(`n${i}`));
    const edges = nodes.slice(1).map((_, i) => edge(`n${i}`, `n${i + 1}`));
    edges.push(edge("n5", "n5"), edge(`n${n - 1}`, `n${n - 3}`));
    const cycles = markCycles(nodes, edges);
    assert.deepEqual(
      cycles,
      [[`n${n - 1}`, `n${n - 2}`, `n${n - 3}`].sort(), ["n5"]].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
    assert.equal(edges.filter((e) => e.onCycle).length, 4);
    assert.equal(nodes[4]?.onCycle, false);
  });
});

describe("renderings", () => {
  const g = typeGraph([vmRule, vpcRule]);
  it("mermaid: a flowchart with labelled edges and the cycle styled", () => {
    const text = toMermaid(g);
    assert.match(text, /^flowchart LR\n/);
    assert.match(text, /n\d \-\->\|"cycle, \.spec\.vpcRef\.name"\| n\d/);
    assert.match(text, /n\d \-\->\|"\.spec\.subnetRef\.name"\| n\d/);
    assert.match(text, /linkStyle \d,\d stroke:#d00/);
    assert.match(text, /\["VirtualMachine<br\/>virtualmachines\.compute\.test\.io<br\/>root:compute"\]/);
  });
  it("dot: quoted ids, red cycle edges", () => {
    const text = toDot(g);
    assert.match(text, /^digraph dependencies \{/);
    assert.match(
      text,
      /"root:compute\|virtualmachines.compute.test.io" -> "root:network\|vpcs.network.test.io" \[label="cycle\\n.spec.vpcRef.name", color="#d00000"/,
    );
  });
  it("json round-trips", () => {
    assert.deepEqual(JSON.parse(toJson(g)), JSON.parse(JSON.stringify(g)));
  });
});

describe("object references", () => {
  const vmObj = (name: string, ns: string, vpc: string): unknown => ({
    metadata: { name, namespace: ns },
    spec: { vpcRef: { name: vpc } },
  });
  const listings = new Map<string, TypeListing>([
    [
      "virtualmachines.compute.test.io",
      {
        ...VM,
        namespaced: true,
        items: [
          vmObj("vm-1", "a", "vpc-1"),
          vmObj("vm-2", "a", "gone"),
          vmObj("vm-3", "b", "vpc-1"),
          { metadata: { name: "vm-4", namespace: "a" }, spec: { subnetRef: { name: "s" } } },
        ],
      },
    ],
    ["vpcs.network.test.io", { ...VPC, namespaced: true, items: [{ metadata: { name: "vpc-1", namespace: "a" } }] }],
    ["subnets.network.test.io", { group: "network.test.io", resource: "subnets" }],
  ]);

  it("finds existing, missing (also in another namespace) and never-bound targets", () => {
    const refs = findReferences([vmRule], listings);
    assert.deepEqual(
      refs.map((r) => `${r.from.namespace}/${r.from.name} -> ${r.to.namespace}/${r.to.name} ${r.state}`),
      [
        "a/vm-1 -> a/vpc-1 exists",
        "a/vm-2 -> a/gone missing",
        "a/vm-4 -> a/s type-not-served",
        "b/vm-3 -> b/vpc-1 missing",
      ],
    );
    const g = objectGraph(refs);
    assert.equal(g.nodes.filter((n) => n.missing).length, 3);
    assert.match(toMermaid(g), /class n\d,n\d,n\d missing/);
  });

  it("check report: the dangling table and the rules that are not Ready", () => {
    const refs = findReferences([vmRule], listings);
    const notReady = notReadyRules([
      {
        workspace: "root:compute",
        object: { metadata: { name: "ok" }, status: { conditions: [{ type: "Ready", status: "True" }] } },
      },
      { workspace: "root:compute", object: { metadata: { name: "new" } } },
      {
        workspace: "root:network",
        object: {
          metadata: { name: "bad" },
          status: { conditions: [{ type: "Ready", status: "False", reason: "InvalidSpec", message: "spec.x: bad" }] },
        },
      },
    ]);
    assert.deepEqual(
      notReady.map((r) => [r.name, r.status, r.reason]),
      [
        ["new", "Unknown", "NoStatus"],
        ["bad", "False", "InvalidSpec"],
      ],
    );
    const text = checkReport("root:consumer1", refs, notReady);
    assert.match(text, /NAMESPACE   DEPENDENT\s+FIELD\s+MISSING\s+RULE/);
    assert.match(text, /a\s+VirtualMachine\/vm-2\s+\.spec\.vpcRef\.name\s+vpcs\/gone\s+root:compute:vm-dependencies/);
    assert.match(text, /root:network\s+bad\s+False\s+InvalidSpec\s+spec\.x: bad/);
    assert.match(text, /vm-4\s+\.spec\.subnetRef\.name\s+subnets\/s \(type not bound here\)/);
    assert.doesNotMatch(text, /vm-1/);
  });
});

describe("resource matching", () => {
  const resources = [
    ...resourcesOf("network.test.io", "v1", {
      resources: [
        { name: "vpcs", singularName: "vpc", kind: "VPC", namespaced: true },
        { name: "vpcs/status", kind: "VPC" },
      ],
    }),
    ...resourcesOf("other.io", "v1", {
      resources: [{ name: "vpcs", singularName: "vpc", kind: "VPC", namespaced: false, shortNames: ["v"] }],
    }),
    ...resourcesOf("", "v1", {
      resources: [
        { name: "configmaps", singularName: "configmap", kind: "ConfigMap", namespaced: true, shortNames: ["cm"] },
      ],
    }),
  ];
  it("by plural, singular, kind, short name, qualified by group", () => {
    for (const q of ["vpcs.network.test.io", "vpc.network.test.io", "VPC.network.test.io"]) {
      const m = matchResource(q, resources);
      assert.ok(m.ok && m.resource.group === "network.test.io" && m.resource.namespaced, q);
    }
    const cm = matchResource("cm", resources);
    assert.ok(cm.ok && cm.resource.name === "configmaps");
  });
  it("ambiguous and unknown names say so", () => {
    const amb = matchResource("vpc", resources);
    assert.ok(!amb.ok && /ambiguous here: vpcs.network.test.io, vpcs.other.io/.test(amb.error));
    const none = matchResource("routers", resources);
    assert.ok(!none.ok && /doesn't have a resource type "routers"/.test(none.error));
  });
});

describe("why report", () => {
  const target: WhyTarget = {
    resource: { group: "network.test.io", version: "v1", name: "vpcs", kind: "VPC", namespaced: true },
    name: "my-vpc",
    namespace: "default",
    workspace: "root:consumer1",
  };
  const refused = {
    kind: "Status",
    code: 409,
    reason: "Conflict",
    message:
      'admission webhook "w.example" denied the request: cannot delete vpcs/my-vpc: still referenced by VirtualMachine/vm-1',
    details: { causes: [{ reason: "ReferencedBy", message: "VirtualMachine/vm-1", field: ".spec.vpcRef.name" }] },
  };
  it("exit codes: 0 allowed, 1 refused by a webhook, 2 not found or forbidden", () => {
    assert.equal(whyResult(target, answerOf(200, {})).exitCode, 0);
    assert.equal(whyResult(target, answerOf(409, refused)).exitCode, 1);
    assert.equal(whyResult(target, answerOf(404, { code: 404, reason: "NotFound", message: "x" })).exitCode, 2);
    const forbidden = whyResult(target, answerOf(403, { code: 403, reason: "Forbidden", message: "no" }));
    assert.equal(forbidden.exitCode, 2);
    assert.match(forbidden.text, /^you may not delete vpcs in root:consumer1, namespace default/);
  });
  it("names the webhook, each blocker with its field, and the next steps", () => {
    const text = whyResult(target, answerOf(409, refused)).text;
    assert.match(text, /a delete would be REFUSED now/);
    assert.match(text, /refused by: admission webhook "w.example" \(409 Conflict\)/);
    assert.match(text, /VirtualMachine\s+default\s+vm-1\s+\.spec\.vpcRef\.name/);
    assert.match(text, /kubectl delete virtualmachine vm-1 -n default/);
    assert.match(text, /kubectl annotate vpcs my-vpc -n default dependencies.opendefense.cloud\/skip-protection=true/);
  });
  it("names the rule behind each blocker for whoever may read the rules", () => {
    const subnetTarget = { ...target, resource: { ...target.resource, name: "subnets", kind: "Subnet" } };
    assert.deepEqual(
      rulesBehind({ kind: "VirtualMachine", name: "vm-1", field: ".spec.vpcRef.name" }, target, [vmRule, vpcRule]),
      ["root:compute:vm-dependencies"],
    );
    // Another field, another kind, another target: no rule.
    assert.deepEqual(rulesBehind({ kind: "VirtualMachine", name: "x", field: ".spec.other" }, target, [vmRule]), []);
    assert.deepEqual(rulesBehind({ kind: "VPC", name: "x" }, target, [vmRule]), []);
    assert.deepEqual(rulesBehind({ kind: "VirtualMachine", name: "x" }, subnetTarget, [vmRule]), [
      "root:compute:vm-dependencies",
    ]);
    const text = whyResult(target, answerOf(409, refused), [vmRule]).text;
    assert.match(text, /KIND\s+NAMESPACE\s+NAME\s+FIELD\s+RULE/);
    assert.match(text, /vm-1\s+\.spec\.vpcRef\.name\s+root:compute:vm-dependencies/);
    assert.match(whyResult(target, answerOf(409, refused), []).text, /vm-1\s+\.spec\.vpcRef\.name\s+\(none readable\)/);
  });
  it("says when it fell back to the message", () => {
    const { details: _d, ...noDetails } = refused;
    assert.match(
      whyResult(target, answerOf(409, noDetails)).text,
      /parsed from the refusal message: the webhook sent no status.details.causes/,
    );
  });
});

describe("tables", () => {
  it("pads columns, upper-cases headers, no trailing blanks", () => {
    assert.equal(
      renderTable(
        ["a", "bb"],
        [
          ["xxx", "y"],
          ["z", ""],
        ],
      ),
      "A     BB\nxxx   y\nz\n",
    );
  });
});
