// Rules you can trust, on a real kcp with both binaries running: a rule that cannot be right is refused by
// `kubectl apply` with the reason; one that may become right is accepted with a warning kubectl prints; and one
// provider's broken rule changes nothing for another provider's tenants, nor shows them anything of it. The compute
// provider and consumer1 act with their own ServiceAccount tokens (kcp.md §9), never kcp-admin.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeEach, test } from "node:test";
import { stringify } from "yaml";
import type { KObject } from "../../tools/kcp/api.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import { PATHS } from "../../tools/kcp/topology.ts";
import { RULES, VPCS, assertDenied, at, create, e2eSuite, tryDelete, vm, vpc, waitForProtection } from "./helpers.ts";

const e2e = e2eSuite();
/** Each tenant's token as a client and as kubectl's kubeconfig (its server is the tenant's workspace). */
const owners = new Map<string, { tenant: Tenant; kubeconfig: string }>();
// Made once, at the first test: node runs root-level before hooks side by side, so kcp may not be up in one yet.
beforeEach(async () => {
  if (owners.size > 0) return;
  for (const p of [PATHS.compute, PATHS.consumer1]) {
    const t = await tenant(e2e.kcp, p, { name: "rule-trust" });
    owners.set(p, { tenant: t, kubeconfig: e2e.kcp.kubeconfigFor(t.token, p, `rule-trust-${p.replace(/:/g, "_")}`) });
  }
});
const owner = (p: string) => owners.get(p) ?? assert.fail(`no tenant for ${p}`);
const consumer1 = () => owner(PATHS.consumer1).tenant.client;
const compute = () => owner(PATHS.compute).tenant.client;

/** A VM rule in the compute provider; `over` replaces parts of the dependent and of its one dependency. */
function rule(name: string, over: { dependent?: Record<string, string>; dependency?: Record<string, unknown> } = {}) {
  const base = dependencyRule(name, [{ resource: "vpcs", path: PATHS.network }]);
  const spec = base["spec"] as { dependent: Record<string, string>; dependencies: Record<string, unknown>[] };
  return {
    ...base,
    spec: {
      dependent: { ...spec.dependent, ...over.dependent },
      dependencies: [{ ...spec.dependencies[0], ...over.dependency }],
    },
  } satisfies KObject;
}

/** `kubectl apply -f` of one object into the compute provider, as the provider runs it with its own token. */
function kubectlApply(obj: KObject, ...flags: string[]): { code: number; out: string } {
  const file = path.join(e2e.kcp.rootDir, `apply-${String((obj.metadata as { name: string }).name)}.yaml`);
  writeFileSync(file, stringify(obj));
  const r = spawnSync(
    "/usr/bin/kubectl",
    [`--kubeconfig=${owner(PATHS.compute).kubeconfig}`, "apply", ...flags, "-f", file],
    { encoding: "utf8" },
  );
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

test("the rule admission webhook is configured in the dep-ctrl workspace and in force", async () => {
  // kcp applies it after replicating it through its cache: wait until a broken rule is refused. Each probe has a new
  // name, so each is a CREATE (kubectl sends nothing for an unchanged object); the ones let through are removed.
  let n = 0;
  await waitFor(
    "the rule webhook to refuse",
    () => {
      const r = kubectlApply(rule(`probe-${n++}`, { dependent: { version: "v9" } }));
      return Promise.resolve(r.code !== 0 && /serves virtualmachines at v1, not v9/.test(r.out) ? true : undefined);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  for (let i = 0; i < n; i++)
    await compute()
      .request("DELETE", `${RULES}/probe-${i}`)
      .catch(() => undefined);
});

test("a dependent version the workspace does not serve is refused by kubectl apply, naming the field", () => {
  const r = kubectlApply(rule("vm-v1beta1", { dependent: { version: "v1beta1" } }));
  assert.notEqual(r.code, 0, r.out);
  assert.match(
    r.out,
    /admission webhook "rules.dependencies.opendefense.cloud" denied the request: DependencyRule "vm-v1beta1" is invalid: spec.dependent.version: APIExport compute.test.io in this rule's workspace serves virtualmachines at v1, not v1beta1/,
  );
});

test("a typo in the dependent resource, a foreign dependent type and an object naming itself are refused", () => {
  const typo = kubectlApply(rule("vm-typo", { dependent: { resource: "virtualmachine" } }));
  assert.match(
    typo.out,
    /does not export virtualmachine.compute.test.io \(it exports virtualmachines.compute.test.io\)/,
  );
  const foreign = kubectlApply(
    rule("vpc-foreign", {
      dependent: { apiExportName: "network.test.io", group: "network.test.io", kind: "VPC", resource: "vpcs" },
      dependency: { resource: "subnets", fieldRef: { path: ".spec.subnetRef.name" } },
    }),
  );
  assert.match(foreign.out, /spec.dependent: APIExport network.test.io in this rule's workspace not found/);
  const self = kubectlApply(
    rule("vpc-self", {
      dependent: { apiExportName: "network.test.io", group: "network.test.io", kind: "VPC", resource: "vpcs" },
      dependency: { fieldRef: { path: ".metadata.name" } },
    }),
  );
  assert.match(self.out, /names the dependent itself/);
  for (const r of [typo, foreign, self]) assert.notEqual(r.code, 0, r.out);
});

test("a dependency on a provider that does not exist yet is accepted with a warning kubectl prints", async () => {
  const r = kubectlApply(rule("vm-later", { dependency: { apiExportRef: { path: "root:later", name: "x.io" } } }));
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Warning: spec.dependencies\[0\]: workspace root:later not found or not readable by dep-ctrl/);
  await compute().request("DELETE", `${RULES}/vm-later`);
});

test("about another workspace, a dry-run apply says the same whether it exists or not", () => {
  // Any provider may dry-run apply rules: what it is told about a workspace path must not say whether the path
  // exists, whether dep-ctrl may read it, or what its exports serve. gadgets are served by nobody.
  const warnings = (path: string): string[] => {
    const dependency = { apiExportRef: { path, name: "network.test.io" }, resource: "gadgets" };
    const r = kubectlApply(rule("vm-probe", { dependency }), "--dry-run=server");
    assert.equal(r.code, 0, r.out);
    return r.out
      .split("\n")
      .filter((line) => line.startsWith("Warning:"))
      .map((line) => line.replaceAll(path, "<path>"));
  };
  const missing = warnings("root:no-such-workspace");
  assert.deepEqual(missing, [
    "Warning: spec.dependencies[0]: workspace <path> not found or not readable by dep-ctrl, or its APIExport " +
      "network.test.io does not serve gadgets.network.test.io at v1 (which one is said only about the rule's own " +
      "workspace); the controller checks the rule again",
  ]);
  // The network provider (exists, readable, its export serves vpcs and subnets), a consumer (exists, no export), root.
  for (const path of [PATHS.network, PATHS.consumer1, "root", `${PATHS.network}:below`])
    assert.deepEqual(warnings(path), missing, path);
});

test("one provider's typo'd path leaves another provider's deletes decided, and names nothing of it", async () => {
  // Written past the admission check (it only warns about an unknown provider): protects nothing, affects nobody.
  const r = kubectlApply(
    rule("vm-typo-path", { dependency: { apiExportRef: { path: "root:does-not-exist", name: "network.test.io" } } }),
  );
  assert.equal(r.code, 0, r.out);
  await create(consumer1(), vpc("kept-vpc"), vm("kept-vm", { vpc: "kept-vpc" }), vpc("free-vpc"));
  await waitForProtection(consumer1(), `${at(VPCS)}/kept-vpc`, true);
  const denied = await tryDelete(consumer1(), `${at(VPCS)}/kept-vpc`);
  assertDenied(denied, /cannot delete vpcs\/kept-vpc: still referenced by VirtualMachine\/kept-vm$/);
  const message = denied.allowed ? "" : denied.message;
  for (const secret of ["does-not-exist", e2e.topo.clusters.compute, "vm-typo-path", PATHS.compute])
    assert.ok(!message.includes(secret), `the message names ${secret}: ${message}`);
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/free-vpc`), { allowed: true });
  type WithStatus = { status?: { conditions?: { type: string; status: string; message: string }[] } };
  await waitFor("the typo'd rule's status", async () => {
    const s = await compute().get<WithStatus>(`${RULES}/vm-typo-path`);
    const c = s.status?.conditions?.find((x) => x.type === "WorkspacesResolved");
    return c?.status === "False" && /root:does-not-exist not found/.test(c.message) ? true : undefined;
  });
  await compute().request("DELETE", `${RULES}/vm-typo-path`);
});

/** `kubectl <args>` in consumer1, as the tenant runs it with its own token. */
function kubectlConsumer(...args: string[]): { code: number; out: string } {
  const r = spawnSync("/usr/bin/kubectl", [`--kubeconfig=${owner(PATHS.consumer1).kubeconfig}`, ...args], {
    encoding: "utf8",
  });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

test("a Warn rule lets a referenced delete through with kubectl printing the warning; switched to Deny it refuses", async () => {
  // VMs name this VPC in .spec.subnetRef.name, a path only the Warn rule looks at (the suite's Deny rule does not).
  const warnRule = (enforcement: string) => {
    const r = rule("vm-warn", { dependency: { fieldRef: { path: ".spec.subnetRef.name" } } });
    return { ...r, spec: { ...r.spec, enforcement } };
  };
  assert.equal(kubectlApply(warnRule("Warn")).code, 0);
  await create(consumer1(), vpc("warn-vpc"), vm("warn-vm", { subnet: "warn-vpc" }));
  await waitFor(
    "the Warn rule to be in force",
    async () => {
      const warned = kubectlConsumer("delete", "vpc", "warn-vpc", "--dry-run=server");
      return /Warning: a rule in Warn mode would refuse this/.test(warned.out) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  const real = kubectlConsumer("delete", "vpc", "warn-vpc");
  assert.equal(real.code, 0, real.out);
  assert.match(
    real.out,
    /Warning: a rule in Warn mode would refuse this: cannot delete vpcs\/warn-vpc: still referenced by VirtualMachine\/warn-vm/,
  );
  assert.match(real.out, /vpc.network.test.io "warn-vpc" deleted/);

  assert.equal(kubectlApply(warnRule("Deny")).code, 0);
  await create(consumer1(), vpc("warn-vpc"));
  await waitForProtection(consumer1(), `${at(VPCS)}/warn-vpc`, true);
  const refused = kubectlConsumer("delete", "vpc", "warn-vpc");
  assert.notEqual(refused.code, 0, refused.out);
  assert.match(refused.out, /still referenced by VirtualMachine\/warn-vm/);
  await compute().request("DELETE", `${RULES}/vm-warn`);
});
