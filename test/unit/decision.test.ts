import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AdmissionRequest, Decision, Denial, Lookup, LookupResult } from "../../src/webhook/admission.ts";
import {
  clusterWideRetries,
  decide,
  denyMessage,
  NOT_SYNCED_MESSAGE,
  planLookups,
} from "../../src/webhook/deletion/decision.ts";
import type { Target } from "../../src/webhook/deletion/target.ts";
import { matchingDependents } from "../../src/webhook/deletion/matching.ts";
import type { RuleEntry, RuleMatch } from "../../src/webhook/rules/registry.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { VM_DEPENDENT, fp } from "./helpers-rules.ts";

const VM = VM_DEPENDENT;
const LB = {
  group: "lb.example.io",
  version: "v1",
  resource: "loadbalancers",
  kind: "LoadBalancer",
  apiExportName: "lb.example.io",
  exportCluster: "compute" as LogicalClusterName,
};
const entry = (rule: string, dependent: RuleEntry["dependent"], path: string, enforcement: "Deny" | "Warn" = "Deny") =>
  ({ rule, dependent, fieldPaths: [fp(path)], enforcement }) satisfies RuleEntry;
const vmRule = entry("prov1/vm-needs-vpc", VM, ".spec.vpcRef.name");
const vmNicRule = entry("prov2/vm-nics", VM, ".spec.nics[*].vpcRef.name");
const lbRule = entry("prov1/lb-needs-vpc", LB, ".spec.vpc");
const vmWarnRule = entry("prov3/vm-warn", VM, ".spec.vpcRef.name", "Warn");
const rules = (...entries: RuleEntry[]): RuleMatch => ({ entries });

function vm(name: string, vpc: string, namespace?: string): unknown {
  return { metadata: { name, ...(namespace ? { namespace } : {}) }, spec: { vpcRef: { name: vpc } } };
}

/** The consumer workspace's dependents, by resource; the fake finder lists them like the API server would. */
type Workspace = Record<string, unknown[]>;
function fakeResults(ws: Workspace, plan: { lookups: Lookup[] }): LookupResult[] {
  return plan.lookups.map((l) => {
    const items = (ws[l.dependent.resource] ?? []).filter(
      (o) =>
        l.namespace === undefined || (o as { metadata: { namespace?: string } }).metadata.namespace === l.namespace,
    );
    return { ok: true, dependents: matchingDependents(items, l), complete: true };
  });
}

function run(request: AdmissionRequest, match: RuleMatch | "not-synced", ws: Workspace = {}): Decision {
  const plan = planLookups(request, match);
  if (plan.kind === "decided") return plan.decision;
  return decide(plan, fakeResults(ws, plan));
}

interface Del {
  name?: string;
  requestName?: string;
  namespace?: string;
  cluster?: unknown;
  annotations?: Record<string, unknown>;
  dryRun?: boolean;
  operation?: string;
}
function req(o: Del = {}): AdmissionRequest {
  const name = o.name ?? "my-vpc";
  const annotations: Record<string, unknown> = { "kcp.io/cluster": o.cluster ?? "consumer1", ...o.annotations };
  if (o.cluster === null) delete annotations["kcp.io/cluster"];
  return {
    uid: "u1",
    operation: o.operation ?? "DELETE",
    resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
    name: o.requestName ?? name,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    userInfo: { username: "alice" },
    oldObject: { metadata: { name, ...(o.namespace ? { namespace: o.namespace } : {}), annotations } },
    ...(o.dryRun ? { dryRun: true } : {}),
  };
}

const conflict = (
  message: string,
  blockers: string[],
  field = ".spec.vpcRef.name",
  rules = ["prov1/vm-needs-vpc"],
): Denial => ({
  allowed: false,
  reason: "referenced",
  code: 409,
  statusReason: "Conflict",
  message,
  blockers,
  causes: blockers.map((b) => ({ reason: "ReferencedBy", message: b, field })),
  rules,
});
const badRequest = (message: string): Decision => ({
  allowed: false,
  reason: "bad-request",
  code: 400,
  statusReason: "BadRequest",
  message,
});

const workspace: Workspace = {
  virtualmachines: [vm("my-vm", "my-vpc", "default"), vm("vm-2", "my-vpc", "default"), vm("other", "vpc-x", "default")],
};

interface Case {
  name: string;
  why: string;
  request: AdmissionRequest;
  match: RuleMatch | "not-synced";
  ws?: Workspace;
  want: Decision;
}

const VPC = {
  group: "network.example.io",
  version: "v1",
  resource: "vpcs",
  kind: "VPC",
  apiExportName: "network.example.io",
  exportCluster: "compute" as LogicalClusterName,
};
const vpcPeerRule = entry("net1/vpc-peers", VPC, ".spec.peerRef.name");
const vpc = (name: string, peer: string): unknown => ({
  metadata: { name, namespace: "default" },
  spec: { peerRef: { name: peer } },
});

const cases: Case[] = [
  {
    name: "an object naming itself never blocks its own deletion",
    why: "a VPC peered with itself would otherwise be undeletable",
    request: req({ namespace: "default" }),
    match: rules(vpcPeerRule),
    ws: { vpcs: [vpc("my-vpc", "my-vpc")] },
    want: { allowed: true, reason: "no-dependents" },
  },
  {
    name: "another object of the same type naming it still blocks",
    why: "only the object itself is exempt",
    request: req({ namespace: "default" }),
    match: rules(vpcPeerRule),
    ws: { vpcs: [vpc("my-vpc", "my-vpc"), vpc("peer", "my-vpc")] },
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VPC/peer", ["VPC/peer"], ".spec.peerRef.name", [
      "net1/vpc-peers",
    ]),
  },
  {
    name: "CREATE is allowed",
    why: "the VWC only sends DELETE; anything else is not ours to judge",
    request: req({ operation: "CREATE" }),
    match: rules(vmRule),
    ws: workspace,
    want: { allowed: true, reason: "not-delete" },
  },
  {
    name: "UPDATE is allowed even before the registry synced",
    why: "readiness gates DELETEs only",
    request: req({ operation: "UPDATE" }),
    match: "not-synced",
    want: { allowed: true, reason: "not-delete" },
  },
  {
    name: "DELETE before the registry synced is denied 503",
    why: "a partial registry could silently allow",
    request: req(),
    match: "not-synced",
    want: {
      allowed: false,
      reason: "not-synced",
      code: 503,
      statusReason: "ServiceUnavailable",
      message: NOT_SYNCED_MESSAGE,
    },
  },
  {
    name: "DELETE without oldObject is a bad request",
    why: "we cannot know what is deleted",
    request: { ...req(), oldObject: undefined },
    match: rules(vmRule),
    want: badRequest("DELETE request has no oldObject: cannot tell which object is being deleted"),
  },
  {
    name: "oldObject that is not an object is a bad request",
    why: "garbage in, 400 out, no crash",
    request: { ...req(), oldObject: "my-vpc" },
    match: rules(vmRule),
    want: badRequest("DELETE request has no oldObject: cannot tell which object is being deleted"),
  },
  {
    name: 'skip-protection "true" allows a referenced object',
    why: "break-glass; the warning tells the user protection was bypassed",
    request: req({ annotations: { "dependencies.opendefense.cloud/skip-protection": "true" } }),
    match: rules(vmRule),
    ws: workspace,
    want: {
      allowed: true,
      reason: "skip-protection",
      warnings: ["deletion protection skipped: dependencies.opendefense.cloud/skip-protection=true"],
    },
  },
  {
    name: 'skip-protection "false" does not skip',
    why: "only the exact value true skips",
    request: req({ namespace: "default", annotations: { "dependencies.opendefense.cloud/skip-protection": "false" } }),
    match: rules(vmRule),
    ws: workspace,
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm, VirtualMachine/vm-2", [
      "VirtualMachine/my-vm",
      "VirtualMachine/vm-2",
    ]),
  },
  {
    name: 'skip-protection "True" does not skip',
    why: "exact match, as the original",
    request: req({ annotations: { "dependencies.opendefense.cloud/skip-protection": "True" } }),
    match: rules(vmRule),
    ws: { virtualmachines: [vm("my-vm", "my-vpc")] },
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm", ["VirtualMachine/my-vm"]),
  },
  {
    name: "missing kcp.io/cluster is a bad request",
    why: "without the consumer workspace there is nowhere to look",
    request: req({ cluster: null }),
    match: rules(vmRule),
    want: badRequest("oldObject has no kcp.io/cluster annotation: cannot tell which workspace it is in"),
  },
  {
    name: "a kcp.io/cluster that is not a logical cluster name is a bad request",
    why: "it goes into a URL path",
    request: req({ cluster: "../root" }),
    match: rules(vmRule),
    want: badRequest('oldObject has an invalid kcp.io/cluster annotation "../root"'),
  },
  {
    name: "no name anywhere is a bad request",
    why: "nothing to match dependents against",
    request: { ...req({ requestName: "" }), oldObject: { metadata: { annotations: { "kcp.io/cluster": "c1" } } } },
    match: rules(vmRule),
    want: badRequest("neither oldObject.metadata.name nor request.name is set"),
  },
  {
    name: "DELETECOLLECTION item (empty request.name) is decided by oldObject's name",
    why: "kcp sends one call per item with an empty name",
    request: req({ requestName: "", namespace: "default" }),
    match: rules(vmRule),
    ws: workspace,
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm, VirtualMachine/vm-2", [
      "VirtualMachine/my-vm",
      "VirtualMachine/vm-2",
    ]),
  },
  {
    name: "request and object namespaces that differ are a bad request",
    why: "a review that contradicts itself is not trusted",
    request: { ...req({ namespace: "default" }), namespace: "other" },
    match: rules(vmRule),
    want: badRequest('request namespace "other" differs from oldObject namespace "default"'),
  },
  {
    name: "no rule for this group/resource allows",
    why: "nothing protects it",
    request: req(),
    match: rules(),
    want: { allowed: true, reason: "no-rules" },
  },
  {
    name: "no dependent references it: allowed",
    why: "the plain happy path",
    request: req({ name: "free-vpc" }),
    match: rules(vmRule),
    ws: workspace,
    want: { allowed: true, reason: "no-dependents" },
  },
  {
    name: "dry-run of a referenced object is denied the same way",
    why: "kubectl --dry-run=server must predict the real outcome",
    request: req({ dryRun: true }),
    match: rules(vmRule),
    ws: { virtualmachines: [vm("my-vm", "my-vpc")] },
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm", ["VirtualMachine/my-vm"]),
  },
  {
    name: "dry-run of an unreferenced object is allowed",
    why: "same decision as without dry-run",
    request: req({ dryRun: true, name: "free-vpc" }),
    match: rules(vmRule),
    ws: workspace,
    want: { allowed: true, reason: "no-dependents" },
  },
  {
    name: "namespaced target: a dependent in another namespace does not block",
    why: "references are namespace-local",
    request: req({ namespace: "team-a" }),
    match: rules(vmRule),
    ws: { virtualmachines: [vm("my-vm", "my-vpc", "team-b"), vm("vm-a", "my-vpc", "team-a")] },
    want: conflict("cannot delete vpcs/my-vpc: still referenced by VirtualMachine/vm-a", ["VirtualMachine/vm-a"]),
  },
  {
    name: "cluster-scoped target: dependents in any namespace block, namespace-qualified",
    why: "the original's Kind/namespace/name form",
    request: req(),
    match: rules(vmRule),
    ws: { virtualmachines: [vm("vm-b", "my-vpc", "team-b"), vm("vm-a", "my-vpc", "team-a"), vm("c", "my-vpc")] },
    want: conflict(
      "cannot delete vpcs/my-vpc: still referenced by VirtualMachine/c, VirtualMachine/team-a/vm-a, VirtualMachine/team-b/vm-b",
      ["VirtualMachine/c", "VirtualMachine/team-a/vm-a", "VirtualMachine/team-b/vm-b"],
    ),
  },
  {
    name: "two rules, two dependent types: all blockers, sorted",
    why: "the message is complete and stable",
    request: req(),
    match: rules(vmRule, lbRule),
    ws: {
      virtualmachines: [vm("vm-1", "my-vpc")],
      loadbalancers: [{ metadata: { name: "lb-1" }, spec: { vpc: "my-vpc" } }],
    },
    want: {
      ...conflict(
        "cannot delete vpcs/my-vpc: still referenced by LoadBalancer/lb-1, VirtualMachine/vm-1",
        ["LoadBalancer/lb-1", "VirtualMachine/vm-1"],
        "",
        ["prov1/lb-needs-vpc", "prov1/vm-needs-vpc"],
      ),
      causes: [
        { reason: "ReferencedBy", message: "LoadBalancer/lb-1", field: ".spec.vpc" },
        { reason: "ReferencedBy", message: "VirtualMachine/vm-1", field: ".spec.vpcRef.name" },
      ],
    },
  },
  {
    name: "two rules on the same dependent type: either field path blocks, each dependent once",
    why: "one lookup per dependent type, blockers deduplicated",
    request: req(),
    match: rules(vmRule, vmNicRule),
    ws: {
      virtualmachines: [
        { metadata: { name: "both" }, spec: { vpcRef: { name: "my-vpc" }, nics: [{ vpcRef: { name: "my-vpc" } }] } },
        { metadata: { name: "nic" }, spec: { nics: [{ vpcRef: { name: "x" } }, { vpcRef: { name: "my-vpc" } }] } },
      ],
    },
    want: {
      ...conflict(
        "cannot delete vpcs/my-vpc: still referenced by VirtualMachine/both, VirtualMachine/nic",
        ["VirtualMachine/both", "VirtualMachine/nic"],
        "",
        ["prov1/vm-needs-vpc", "prov2/vm-nics"],
      ),
      // Each cause names the first of the rules' field paths at which the dependent names the target.
      causes: [
        { reason: "ReferencedBy", message: "VirtualMachine/both", field: ".spec.vpcRef.name" },
        { reason: "ReferencedBy", message: "VirtualMachine/nic", field: ".spec.nics[*].vpcRef.name" },
      ],
    },
  },
];

describe("decision table", () => {
  for (const c of cases) {
    it(`${c.name} (${c.why})`, () => {
      assert.deepEqual(run(c.request, c.match, c.ws), c.want);
    });
  }

  it("skip-protection never looks up dependents", () => {
    const plan = planLookups(
      req({ annotations: { "dependencies.opendefense.cloud/skip-protection": "true" } }),
      rules(vmRule),
    );
    assert.equal(plan.kind, "decided");
  });
});

describe("planLookups", () => {
  it("lists in the object's namespace for a namespaced target", () => {
    const plan = planLookups(req({ namespace: "team-a" }), rules(vmRule));
    assert.equal(plan.kind, "lookup");
    assert.deepEqual(
      plan.kind === "lookup" && plan.lookups.map((l) => ({ ...l, fieldPaths: l.fieldPaths.map((p) => p.source) })),
      [
        {
          consumer: "consumer1",
          dependent: VM,
          namespace: "team-a",
          name: "my-vpc",
          fieldPaths: [".spec.vpcRef.name"],
          rules: ["prov1/vm-needs-vpc"],
          enforcement: "Deny",
        },
      ],
    );
  });

  it("lists across all namespaces for a cluster-scoped target, one lookup per dependent type", () => {
    const plan = planLookups(req(), rules(vmRule, vmNicRule, lbRule));
    assert.equal(plan.kind, "lookup");
    if (plan.kind !== "lookup") return;
    assert.deepEqual(plan.target, { consumer: "consumer1", resource: "vpcs", name: "my-vpc" });
    assert.deepEqual(
      plan.lookups.map((l) => [l.dependent.resource, l.namespace, l.fieldPaths.map((p) => p.source), l.rules]),
      [
        [
          "virtualmachines",
          undefined,
          [".spec.vpcRef.name", ".spec.nics[*].vpcRef.name"],
          ["prov1/vm-needs-vpc", "prov2/vm-nics"],
        ],
        ["loadbalancers", undefined, [".spec.vpc"], ["prov1/lb-needs-vpc"]],
      ],
    );
  });
});

describe("decide", () => {
  const plan = planLookups(req(), rules(vmRule, lbRule));
  if (plan.kind !== "lookup") throw new Error("want a lookup plan");

  it("a lookup error denies 500, even when another lookup found blockers; kcp's words go to the log only", () => {
    const d = decide(plan, [
      { ok: true, dependents: [{ name: "vm-1", field: ".spec.vpcRef.name" }], complete: true },
      { ok: false, error: "GET https://kcp/x: 403 Forbidden: access denied" },
    ]);
    assert.deepEqual(d, {
      allowed: false,
      reason: "lookup-error",
      code: 500,
      statusReason: "InternalError",
      // The dependent type is another provider's: the log gets it, the deleter does not.
      message: "cannot check dependents of vpcs/my-vpc: listing them in this workspace failed, retry later",
      detail:
        "rule prov1/lb-needs-vpc: listing loadbalancers.lb.example.io/v1: GET https://kcp/x: 403 Forbidden: access denied",
    });
  });

  it("a missing result fails closed", () => {
    const d = decide(plan, [{ ok: true, dependents: [], complete: true }]);
    assert.equal(d.allowed, false);
    assert.equal(d.allowed === false && d.code, 500);
  });

  it("empty results (e.g. 404: type not bound) allow", () => {
    const d = decide(plan, [
      { ok: true, dependents: [], complete: true },
      { ok: true, dependents: [], complete: true },
    ]);
    assert.deepEqual(d, { allowed: true, reason: "no-dependents" });
  });

  it("the same dependent from two lookups is listed once", () => {
    const d = decide(plan, [
      {
        ok: true,
        dependents: [
          { name: "x", field: ".spec.vpcRef.name" },
          { name: "x", field: ".spec.vpcRef.name" },
        ],
        complete: true,
      },
      { ok: true, dependents: [{ name: "x", field: ".spec.vpc" }], complete: true },
    ]);
    assert.deepEqual(d, {
      ...conflict(
        "cannot delete vpcs/my-vpc: still referenced by LoadBalancer/x, VirtualMachine/x",
        ["LoadBalancer/x", "VirtualMachine/x"],
        "",
        ["prov1/lb-needs-vpc", "prov1/vm-needs-vpc"],
      ),
      causes: [
        { reason: "ReferencedBy", message: "LoadBalancer/x", field: ".spec.vpc" },
        { reason: "ReferencedBy", message: "VirtualMachine/x", field: ".spec.vpcRef.name" },
      ],
    });
  });
});

describe("Warn enforcement", () => {
  const ws: Workspace = { virtualmachines: [vm("my-vm", "my-vpc", "default")] };

  it("a Warn rule alone lets a referenced delete through, with the refusal as a warning", () => {
    const d = run(req({ namespace: "default" }), rules(vmWarnRule), ws);
    assert.deepEqual(d, {
      allowed: true,
      reason: "warned",
      warnings: [
        "a rule in Warn mode would refuse this: cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm",
      ],
      rules: ["prov3/vm-warn"],
    });
  });

  it("a Deny rule on the same type still refuses: Warn never weakens another rule", () => {
    const d = run(req({ namespace: "default" }), rules(vmWarnRule, vmRule), ws);
    assert.equal(d.allowed, false);
    assert.deepEqual(d.allowed ? [] : d.rules, ["prov1/vm-needs-vpc"]);
  });

  it("a failed Warn lookup warns instead of refusing", () => {
    const plan = planLookups(req(), rules(vmWarnRule));
    if (plan.kind !== "lookup") throw new Error("want a lookup plan");
    const d = decide(plan, [{ ok: false, error: "boom" }]);
    assert.equal(d.allowed, true);
    assert.match((d.allowed && d.warnings?.[0]) || "", /Warn mode could not check vpcs\/my-vpc/);
  });
});

describe("clusterWideRetries", () => {
  it("repeats a namespaced lookup that 404'd across all namespaces (a cluster-scoped dependent type)", () => {
    const plan = planLookups(req({ namespace: "default" }), rules(vmRule, lbRule));
    if (plan.kind !== "lookup") throw new Error("want a lookup plan");
    const retries = clusterWideRetries(plan, [
      { ok: true, dependents: [], complete: true, notBound: true },
      { ok: true, dependents: [], complete: true },
    ]);
    assert.deepEqual([...retries.keys()], [0]);
    assert.equal(retries.get(0)?.namespace, undefined);
    assert.equal(retries.get(0)?.dependent.resource, "virtualmachines");
  });

  it("has nothing to repeat for a cluster-wide lookup or a list that answered", () => {
    const plan = planLookups(req(), rules(vmRule));
    if (plan.kind !== "lookup") throw new Error("want a lookup plan");
    assert.equal(clusterWideRetries(plan, [{ ok: true, dependents: [], complete: true, notBound: true }]).size, 0);
  });

  it("a dry run asks for every blocker (up to 1,000), a real delete only for what the message names", () => {
    const dry = planLookups(req({ dryRun: true }), rules(vmRule));
    const real = planLookups(req(), rules(vmRule));
    assert.equal(dry.kind === "lookup" && dry.limit, 1000);
    assert.equal(real.kind === "lookup" && real.limit, 10);
  });
});

describe("deny message", () => {
  const target: Target = { consumer: "c" as LogicalClusterName, resource: "vpcs", name: "my-vpc" };
  const names = (n: number) => Array.from({ length: n }, (_, i) => `VirtualMachine/vm-${String(i).padStart(2, "0")}`);

  it("names exactly 10 without a suffix", () => {
    assert.equal(
      denyMessage(target, names(10), true),
      `cannot delete vpcs/my-vpc: still referenced by ${names(10).join(", ")}`,
    );
  });

  it('caps at 10 with "and N more"', () => {
    assert.equal(
      denyMessage(target, names(13), true),
      `cannot delete vpcs/my-vpc: still referenced by ${names(10).join(", ")} and 3 more`,
    );
  });

  it('says "at least" when listing stopped early', () => {
    assert.equal(
      denyMessage(target, names(11), false),
      `cannot delete vpcs/my-vpc: still referenced by ${names(10).join(", ")} and at least 1 more`,
    );
  });

  it("decide passes incompleteness through to the message", () => {
    const plan = planLookups(req(), rules(vmRule));
    if (plan.kind !== "lookup") throw new Error("want a lookup plan");
    const deps = Array.from({ length: 12 }, (_, i) => ({ name: `vm-${String(i).padStart(2, "0")}`, field: ".x.y" }));
    const d = decide(plan, [{ ok: true, dependents: deps, complete: false }]);
    assert.equal(d.allowed === false && d.message.endsWith(", VirtualMachine/vm-09 and at least 2 more"), true);
    assert.equal(d.allowed === false && d.blockers?.length, 12);
  });
});

describe("matchingDependents", () => {
  it("keeps matching items with a name, with their namespace", () => {
    const lookup = planLookups(req(), rules(vmRule));
    if (lookup.kind !== "lookup") throw new Error("want a lookup plan");
    const items = [vm("a", "my-vpc", "ns"), vm("b", "other"), { spec: { vpcRef: { name: "my-vpc" } } }, null, 42];
    assert.deepEqual(matchingDependents(items, lookup.lookups[0]!), [
      { namespace: "ns", name: "a", field: ".spec.vpcRef.name" },
    ]);
  });
});
