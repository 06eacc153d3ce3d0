// The apply-time check of DependencyRules: what is refused (cannot be right), what only warns (may become right).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ExportFacts } from "../../src/api/references.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import { admitRule, type RuleCheckDeps } from "../../src/webhook/rules/rule-admission.ts";
import { ruleObject, type DepSpec } from "./helpers-rules.ts";

const schemas = (kinds: Record<string, string>, versions = ["v1"]) =>
  new Map(
    Object.entries(kinds).map(([schema, kind]) => [
      schema,
      { kind, versions: versions.map((name) => ({ name, served: true })) },
    ]),
  );

/** compute exports virtualmachines at v1; network exports vpcs and subnets at v1. */
function deps(over: { exports?: Record<string, ExportFacts>; resolutions?: Record<string, Resolution> } = {}) {
  const exports: Record<string, ExportFacts> = {
    "compute/compute.test.io": {
      found: true,
      resources: [{ group: "compute.test.io", name: "virtualmachines", schema: "v1.vm" }],
      schemas: schemas({ "v1.vm": "VirtualMachine" }),
    },
    "net/network.test.io": {
      found: true,
      resources: [
        { group: "network.test.io", name: "vpcs", schema: "v1.vpcs" },
        { group: "network.test.io", name: "subnets", schema: "v1.subnets" },
      ],
      schemas: schemas({ "v1.vpcs": "VPC", "v1.subnets": "Subnet" }),
    },
    ...over.exports,
  };
  const resolutions: Record<string, Resolution> = {
    "root:network-provider": { ok: true, cluster: logicalClusterName("net") },
    ...over.resolutions,
  };
  const d: RuleCheckDeps = {
    fetchExport: (cluster, name) => Promise.resolve(exports[`${cluster}/${name}`] ?? { found: false, definite: true }),
    resolve: (path) => Promise.resolve(resolutions[path] ?? { ok: false, reason: `workspace ${path} not found` }),
  };
  return d;
}

function create(dependent: Parameters<typeof ruleObject>[2] & { version?: string }, list: DepSpec[]): AdmissionRequest {
  const object = ruleObject("compute", "vm", dependent, list) as { spec: { dependent: Record<string, string> } };
  if (dependent.version) object.spec.dependent["version"] = dependent.version;
  return {
    uid: "u",
    operation: "CREATE",
    resource: { group: "dependencies.opendefense.cloud", version: "v1alpha1", resource: "dependencyrules" },
    name: "vm",
    object,
  };
}

const VM = { resource: "virtualmachines" };

describe("admitRule", () => {
  it("accepts a rule whose references all check out", async () => {
    assert.deepEqual(await admitRule(create(VM, [{ resource: "vpcs" }]), deps()), {
      allowed: true,
      reason: "rule-valid",
    });
  });

  it("refuses a dependent version its workspace does not serve, naming field, export and versions", async () => {
    const d = await admitRule(create({ ...VM, version: "v1beta1" }, [{ resource: "vpcs" }]), deps());
    assert.deepEqual(d, {
      allowed: false,
      reason: "invalid-rule",
      code: 422,
      statusReason: "Invalid",
      message:
        'DependencyRule "vm" is invalid: spec.dependent.version: APIExport compute.test.io in this rule\'s ' +
        "workspace serves virtualmachines at v1, not v1beta1",
    });
  });

  it("refuses a dependent type the rule's workspace does not export (a foreign type)", async () => {
    const d = await admitRule(
      create({ group: "network.test.io", resource: "vpcs", kind: "VPC" }, [{ resource: "subnets" }]),
      deps(),
    );
    assert.equal(d.allowed, false);
    assert.match(
      d.allowed ? "" : d.message,
      /spec.dependent: APIExport network.test.io in this rule's workspace not found/,
    );
  });

  it("refuses what the schema or the rule model refuses: a bad field path, an object naming itself", async () => {
    const badPath = await admitRule(create(VM, [{ resource: "vpcs", fieldPath: ".spec..x" }]), deps());
    assert.match(badPath.allowed ? "" : badPath.message, /fieldRef.path: invalid field path ".spec..x"/);
    const self = await admitRule(
      create({ group: "network.test.io", resource: "vpcs", kind: "VPC" }, [
        { resource: "vpcs", fieldPath: ".metadata.name" },
      ]),
      deps(),
    );
    assert.match(self.allowed ? "" : self.message, /names the dependent itself/);
  });

  it("refuses a dependency resource its provider's export does not serve (a typo)", async () => {
    const d = await admitRule(create(VM, [{ resource: "vpc" }]), deps());
    assert.match(
      d.allowed ? "" : d.message,
      /spec.dependencies\[0\]: APIExport network.test.io in root:network-provider does not export vpc.network.test.io \(it exports subnets.network.test.io, vpcs.network.test.io\)/,
    );
  });

  it("only warns about a provider that does not exist yet, or whose export is not there yet", async () => {
    const unknownPath = await admitRule(create(VM, [{ resource: "vpcs", path: "root:later" }]), deps());
    assert.deepEqual(unknownPath, {
      allowed: true,
      reason: "rule-unverified",
      warnings: [
        "spec.dependencies[0].apiExportRef.path: workspace root:later not found; the rule protects nothing there yet",
      ],
    });
    const noExport = await admitRule(
      create(VM, [{ resource: "vpcs" }]),
      deps({ exports: { "net/network.test.io": { found: false, definite: true } } }),
    );
    assert.equal(noExport.allowed, true);
    assert.deepEqual(noExport.allowed && noExport.warnings, [
      "spec.dependencies[0]: APIExport network.test.io in root:network-provider not found",
    ]);
  });

  it("a workspace that declined the read-only claims: allowed, with a warning that the rule is not enforced", async () => {
    const d = await admitRule(
      create(VM, [{ resource: "vpcs" }]),
      deps({
        exports: {
          "compute/compute.test.io": { found: false, definite: false, reason: "not allowed", declined: true },
        },
      }),
    );
    assert.equal(d.allowed, true);
    assert.match(
      (d.allowed && d.warnings?.[0]) || "",
      /cannot check APIExport compute.test.io in this rule's workspace: not allowed; this rule is NOT enforced until its workspace accepts the read-only claims/,
    );
  });

  it("a provider path that does not resolve: allowed, with a warning that it protects nothing there", async () => {
    const d = await admitRule(
      create(VM, [{ resource: "vpcs", path: "root:team-b:private" }]),
      deps({ resolutions: { "root:team-b:private": { ok: false, transient: true, reason: "403: not allowed" } } }),
    );
    assert.equal(d.allowed, true);
    assert.match((d.allowed && d.warnings?.[0]) || "", /403: not allowed; the rule protects nothing there yet/);
  });

  it("lets anything but CREATE and UPDATE through", async () => {
    assert.equal((await admitRule({ ...create(VM, []), operation: "DELETE" }, deps())).allowed, true);
  });
});
