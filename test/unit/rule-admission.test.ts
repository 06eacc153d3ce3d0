// The apply-time check of DependencyRules: what is refused (cannot be right), what only warns (may become right).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import type { ExportFacts } from "../../src/api/references.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import {
  admitRule,
  checkRule,
  createRuleAdmissionHandler,
  type RuleCheckDeps,
} from "../../src/webhook/rules/rule-admission.ts";
import { ruleObject, type DepSpec } from "./helpers-rules.ts";
import { AuthorCaps } from "../../src/api/rule-cap.ts";

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
    // The rules below live in the compute provider's workspace ("compute").
    "root:compute-provider": { ok: true, cluster: logicalClusterName("compute") },
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

  it("refuses a dependency in the rule's own workspace that its export does not serve (a typo), in detail", async () => {
    const own = { group: "compute.test.io", resource: "virtualmachine", path: "root:compute-provider" };
    const d = await admitRule(create(VM, [{ ...own, fieldPath: ".spec.vmRef.name" }]), deps());
    assert.match(
      d.allowed ? "" : d.message,
      /spec.dependencies\[0\]: APIExport compute.test.io in root:compute-provider does not export virtualmachine.compute.test.io \(it exports virtualmachines.compute.test.io\)/,
    );
  });

  it("says one thing about another workspace whatever is wrong there: it names only what the author wrote", async () => {
    // Any tenant may dry-run apply rules: a workspace that does not exist, one dep-ctrl may not read, one being
    // deleted, and one that exists with an export that is missing, declined, or serves something else must all get
    // the same answer, or applying rules would map the installation's workspaces and their exports.
    // (What checks out is valid, silently: a rule naming exactly an export there learns it is right. That takes
    // knowing the path, the export and what it serves, and the provider's consent to dep-ctrl reading its exports.)
    const at = (over: Parameters<typeof deps>[0]) => deps(over);
    const p = "root:someone-else";
    const exportsOnly = (resources: string[], versions = ["v1"]): Extract<ExportFacts, { found: true }> => ({
      found: true,
      resources: resources.map((r) => ({ group: "network.test.io", name: r, schema: `v1.${r}` })),
      schemas: schemas(Object.fromEntries(resources.map((r) => [`v1.${r}`, "X"])), versions),
    });
    const resolved = { [p]: { ok: true, cluster: logicalClusterName("other") } as Resolution };
    const situations: Record<string, RuleCheckDeps> = {
      "no such workspace": at({ resolutions: { [p]: { ok: false, reason: `workspace ${p} not found` } } }),
      "not readable": at({ resolutions: { [p]: { ok: false, transient: true, reason: "not allowed to read" } } }),
      "being deleted": at({ resolutions: { [p]: { ok: false, reason: `workspace ${p} is being deleted` } } }),
      "no such export": at({ resolutions: resolved }),
      "export not readable": at({
        resolutions: resolved,
        exports: { "other/network.test.io": { found: false, definite: false, reason: "403", declined: true } },
      }),
      "resource not exported": at({
        resolutions: resolved,
        exports: { "other/network.test.io": exportsOnly(["subnets"]) },
      }),
      "version not served": at({
        resolutions: resolved,
        exports: { "other/network.test.io": exportsOnly(["vpcs"], ["v2"]) },
      }),
      "schema not readable": at({
        resolutions: resolved,
        exports: { "other/network.test.io": { ...exportsOnly(["vpcs"]), schemas: new Map<string, never>() } },
      }),
    };
    const want = {
      allowed: true,
      reason: "rule-unverified",
      warnings: [
        `spec.dependencies[0]: workspace ${p} not found or not readable by dep-ctrl, or its APIExport network.test.io ` +
          "does not serve vpcs.network.test.io at v1 (which one is said only about the rule's own workspace); " +
          "the controller checks the rule again",
      ],
    };
    const hidden = new Set<string>();
    for (const [situation, d] of Object.entries(situations)) {
      const checked = await checkRule(create(VM, [{ resource: "vpcs", path: p }]), d);
      assert.deepEqual(checked.decision, want, situation);
      // The operator's log gets the reason, one per situation.
      assert.equal(checked.hidden.length, 1, situation);
      hidden.add(checked.hidden[0]!);
    }
    assert.equal(hidden.size, Object.keys(situations).length);
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

  it("logs what the warnings left unsaid, for the operator", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: "info" },
      { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const handler = createRuleAdmissionHandler({ deps: deps(), logger });
    const d = await handler(create(VM, [{ resource: "vpcs", path: "root:later" }]));
    assert.equal(d.allowed, true);
    const line = lines.find((l) => l["msg"] === "rule accepted with warnings");
    assert.deepEqual(line?.["unconfirmed"], ["spec.dependencies[0].apiExportRef.path: workspace root:later not found"]);
  });

  it("lets anything but CREATE and UPDATE through", async () => {
    assert.equal((await admitRule({ ...create(VM, []), operation: "DELETE" }, deps())).allowed, true);
  });
});

describe("admitRule: rules per workspace capped (--max-rules-per-workspace)", () => {
  const key = (name: string) => ({ cluster: logicalClusterName("compute"), name });
  const capped = (names: string[], cap: number): RuleCheckDeps => {
    const caps = AuthorCaps.of(
      names.map((n, i) => ({ key: key(n), created: `2026-01-01T00:00:0${i}Z` })),
      cap,
    );
    return { ...deps(), authorCap: { cap, caps: () => caps } };
  };

  it("refuses a new rule past the cap, naming the limit; another workspace's rules do not count", async () => {
    const d = capped(["a", "b"], 2);
    const refused = await admitRule(create(VM, [{ resource: "vpcs" }]), d);
    assert.equal(refused.allowed, false);
    assert.ok(!refused.allowed);
    assert.equal(refused.code, 422);
    assert.match(refused.message, /already has 2 DependencyRules, and at most 2 .*--max-rules-per-workspace=2/);
    const other = { ...deps(), authorCap: { cap: 2, caps: () => AuthorCaps.of([], 2) } };
    assert.equal((await admitRule(create(VM, [{ resource: "vpcs" }]), other)).allowed, true);
  });

  it("admits a rule within the cap, and an update of one past it with a warning that it is not enforced", async () => {
    assert.equal((await admitRule(create(VM, [{ resource: "vpcs" }]), capped(["a"], 2))).allowed, true);
    const update = { ...create(VM, [{ resource: "vpcs" }]), operation: "UPDATE" };
    const object = update.object as { metadata: Record<string, unknown> };
    object.metadata["creationTimestamp"] = "2026-01-01T00:00:09Z";
    const d = capped(["a", "b", "vm"], 2);
    const answer = await admitRule(update, d);
    assert.ok(answer.allowed);
    assert.match(answer.warnings?.join(" ") ?? "", /not enforced: its workspace has more than 2 DependencyRules/);
  });
});
