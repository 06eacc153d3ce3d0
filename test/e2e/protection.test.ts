// The product's main journeys on a real kcp: the controller and the webhook run as separate processes with their own
// identities and only the bootstrap RBAC from deploy/rbac/, and every delete goes through kcp's admission chain.
// The consumers and the compute provider act with their own ServiceAccount tokens (kcp.md §9), never kcp-admin.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { beforeEach, test } from "node:test";
import { apply, type KObject } from "../../tools/kcp/api.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import { PATHS, vmRule } from "../../tools/kcp/topology.ts";
import {
  RULES,
  VMS,
  VPCS,
  SUBNETS,
  VWC_PATH,
  assertDenied,
  at,
  create,
  e2eSuite,
  subnet,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";
import { readyRace } from "./ready-race.ts";

const e2e = e2eSuite();
const owners = new Map<string, Tenant>();
// Made once, at the first test: node runs root-level before hooks side by side, so kcp may not be up in one yet.
beforeEach(async () => {
  if (owners.size > 0) return;
  for (const p of [PATHS.consumer1, PATHS.consumer2, PATHS.compute])
    owners.set(p, await tenant(e2e.kcp, p, { name: "protection" }));
});
const owner = (p: string) => owners.get(p) ?? assert.fail(`no tenant for ${p}`);
const consumer1 = () => owner(PATHS.consumer1).client;
const consumer2 = () => owner(PATHS.consumer2).client;
const compute = () => owner(PATHS.compute).client;

interface Vwc {
  metadata: { labels?: Record<string, string> };
  webhooks: {
    name: string;
    clientConfig: { url: string; caBundle: string };
    rules: { operations: string[]; apiGroups: string[]; resources: string[] }[];
    failurePolicy: string;
    sideEffects: string;
  }[];
}

test("1. creating the rule installs the webhook configuration in network-provider", async () => {
  await waitForVwc(e2e.kcp, true);
  const vwc = await e2e.kcp.ws(PATHS.network).get<Vwc>(VWC_PATH);
  assert.equal(vwc.webhooks.length, 1);
  const [hook] = vwc.webhooks;
  assert.equal(hook?.name, "dependency-controller.dependencies.opendefense.cloud");
  assert.equal(hook?.clientConfig.url, `${e2e.bins.webhookUrl}/validate/${e2e.topo.clusters.network}`);
  assert.equal(hook?.failurePolicy, "Fail");
  assert.equal(hook?.sideEffects, "None");
  const resources = hook?.rules.flatMap((r) => r.resources).sort();
  assert.deepEqual(resources, ["subnets", "vpcs"]);
  assert.ok(hook?.rules.every((r) => r.operations.join() === "DELETE"));
});

test("2. deleting a VPC referenced by a VM is denied and the message names the VM", async () => {
  await create(consumer1(), vpc("my-vpc"), vm("my-vm", { vpc: "my-vpc" }));
  await waitForProtection(consumer1(), `${at(VPCS)}/my-vpc`, true);
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/my-vpc`),
    /cannot delete vpcs\/my-vpc: still referenced by VirtualMachine\/my-vm$/,
  );
  // What a user sees with kubectl.
  const { token } = owner(PATHS.consumer1);
  const kubeconfig = e2e.kcp.kubeconfigFor(token, PATHS.consumer1, "protection-consumer1.kubeconfig");
  let stderr = "";
  try {
    execFileSync("kubectl", [`--kubeconfig=${kubeconfig}`, "delete", "vpc", "my-vpc"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    stderr = (err as { stderr: string }).stderr;
  }
  assert.equal(
    stderr.trim(),
    'Error from server (Conflict): admission webhook "dependency-controller.dependencies.opendefense.cloud" ' +
      "denied the request: cannot delete vpcs/my-vpc: still referenced by VirtualMachine/my-vm",
  );
});

test("3. with two VMs, deleting one still blocks; deleting both allows", async () => {
  await create(consumer1(), vm("second-vm", { vpc: "my-vpc" }));
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/my-vpc`),
    /still referenced by VirtualMachine\/my-vm, VirtualMachine\/second-vm$/,
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(VMS)}/my-vm`), { allowed: true });
  assertDenied(await tryDelete(consumer1(), `${at(VPCS)}/my-vpc`), /still referenced by VirtualMachine\/second-vm$/);
  assert.deepEqual(await tryDelete(consumer1(), `${at(VMS)}/second-vm`), { allowed: true });
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/my-vpc`), { allowed: true });
});

test("4. consumer2's same-named VPC with no VMs deletes freely", async () => {
  await create(consumer1(), vpc("shared-name"), vm("c1-vm", { vpc: "shared-name" }));
  await create(consumer2(), vpc("shared-name"));
  assertDenied(await tryDelete(consumer1(), `${at(VPCS)}/shared-name`), /VirtualMachine\/c1-vm/);
  assert.deepEqual(await tryDelete(consumer2(), `${at(VPCS)}/shared-name`), { allowed: true });
});

test("5. consumer2 with its own VM is blocked, then allowed after the VM goes", async () => {
  await create(consumer2(), vpc("c2-vpc"), vm("c2-vm", { vpc: "c2-vpc" }));
  assertDenied(
    await tryDelete(consumer2(), `${at(VPCS)}/c2-vpc`),
    /cannot delete vpcs\/c2-vpc: still referenced by VirtualMachine\/c2-vm$/,
  );
  assert.deepEqual(await tryDelete(consumer2(), `${at(VMS)}/c2-vm`), { allowed: true });
  assert.deepEqual(await tryDelete(consumer2(), `${at(VPCS)}/c2-vpc`), { allowed: true });
});

test("6. the skip-protection annotation allows the delete", async () => {
  await create(
    consumer1(),
    vpc("skip-vpc", "default", { "dependencies.opendefense.cloud/skip-protection": "true" }),
    vm("skip-vm", { vpc: "skip-vpc" }),
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/skip-vpc`), { allowed: true });
});

test("7. deleting the rule removes the webhook configuration and deletes are allowed; recreating restores protection", async () => {
  await create(consumer1(), vpc("recreate-vpc"), vm("recreate-vm", { vpc: "recreate-vpc" }));
  const path = `${at(VPCS)}/recreate-vpc`;
  assertDenied(await tryDelete(consumer1(), path, { dryRun: true }), /VirtualMachine\/recreate-vm/);

  await compute().request("DELETE", `${RULES}/vm-dependencies`);
  await waitForVwc(e2e.kcp, false);
  await waitForProtection(consumer1(), path, false);

  await apply(compute(), vmRule(e2e.topo.vars));
  await waitForVwc(e2e.kcp, true);
  await waitForProtection(consumer1(), path, true);
  assertDenied(await tryDelete(consumer1(), path), /still referenced by VirtualMachine\/recreate-vm$/);
});

test("8. editing the rule in place (fieldRef.path) takes effect without recreating it", async () => {
  await create(consumer1(), vpc("update-vpc"), vm("update-vm", { vpc: "update-vpc" }));
  const path = `${at(VPCS)}/update-vpc`;
  await waitForProtection(consumer1(), path, true);
  const patch = (fieldPath: string) =>
    compute().request("PATCH", `${RULES}/vm-dependencies`, {
      contentType: "application/json-patch+json",
      body: [{ op: "replace", path: "/spec/dependencies/0/fieldRef/path", value: fieldPath }],
    });
  await patch(".spec.notarealfield");
  await waitForProtection(consumer1(), path, false);
  await patch(".spec.vpcRef.name");
  await waitForProtection(consumer1(), path, true);
});

test("9. a VM that references both a VPC and a subnet blocks each", async () => {
  await create(
    consumer1(),
    vpc("both-vpc"),
    subnet("both-subnet"),
    vm("both-vm", { vpc: "both-vpc", subnet: "both-subnet" }),
  );
  await waitForProtection(consumer1(), `${at(SUBNETS)}/both-subnet`, true);
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/both-vpc`),
    /cannot delete vpcs\/both-vpc: still referenced by VirtualMachine\/both-vm$/,
  );
  assertDenied(
    await tryDelete(consumer1(), `${at(SUBNETS)}/both-subnet`),
    /cannot delete subnets\/both-subnet: still referenced by VirtualMachine\/both-vm$/,
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(VMS)}/both-vm`), { allowed: true });
  assert.deepEqual(await tryDelete(consumer1(), `${at(SUBNETS)}/both-subnet`), { allowed: true });
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/both-vpc`), { allowed: true });
});

test("10. once `kubectl wait --for=condition=Ready` returns for a new rule, a referenced delete is refused at once", async () => {
  const [provider, consumer] = [await tenant(e2e.kcp, PATHS.compute), await tenant(e2e.kcp, PATHS.consumer1)];
  const rule = (name: string): KObject => {
    const [r] = vmRule(e2e.topo.vars);
    return { ...r!, metadata: { name } };
  };
  const rounds = await readyRace({
    env: e2e.kcp,
    provider,
    consumer,
    rule,
    suiteRules: { names: ["vm-dependencies"], restore: vmRule(e2e.topo.vars) },
    rounds: 3,
  });
  process.stdout.write(`# ready race: ${JSON.stringify(rounds)}\n`);
  for (const r of rounds) assertDenied(r.outcome, new RegExp(`still referenced by VirtualMachine/${r.rule}$`));
});
