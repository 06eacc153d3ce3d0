// The second look before a denial: a found dependent the index still holds but kcp no longer has, or that no longer
// names the target, is dropped; any doubt keeps it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Dependent } from "../../src/webhook/admission.ts";
import { CONFIRM_AT_MOST, confirmDependents, dependentPath } from "../../src/webhook/deletion/index/confirm.ts";
import type { FoundDependents } from "../../src/webhook/deletion/finder.ts";
import { vmLookup } from "./helpers-rules.ts";

const vm = (name: string, vpc: string, namespace = "default") => ({
  apiVersion: "compute.example.io/v1",
  kind: "VirtualMachine",
  metadata: { name, namespace },
  spec: { vpcRef: { name: vpc } },
});
const dep = (name: string, namespace = "default"): Dependent => ({ namespace, name, field: ".spec.vpcRef.name" });
const found = (dependents: Dependent[], complete = true): FoundDependents => ({ ok: true, dependents, complete });

/** A kcp as a map from path to object, recording what was read. */
function kcpWith(objects: Record<string, unknown>, failing: string[] = []) {
  const reads: string[] = [];
  const read = async (path: string): Promise<unknown> => {
    reads.push(path);
    if (failing.includes(path)) throw new Error("503 ServiceUnavailable");
    return objects[path];
  };
  return { read, reads };
}

const at = (name: string, ns = "default") => `/apis/compute.example.io/v1/namespaces/${ns}/virtualmachines/${name}`;

test("dependentPath: namespaced, cluster-scoped and core-group dependents, escaped", () => {
  const lookup = vmLookup();
  assert.equal(
    dependentPath(lookup, dep("a b", "ns")),
    "/apis/compute.example.io/v1/namespaces/ns/virtualmachines/a%20b",
  );
  assert.equal(dependentPath(lookup, { name: "x", field: ".spec" }), "/apis/compute.example.io/v1/virtualmachines/x");
  const core = vmLookup({ dependent: { ...lookup.dependent, group: "", version: "v1", resource: "configmaps" } });
  assert.equal(dependentPath(core, dep("c")), "/api/v1/namespaces/default/configmaps/c");
});

test("a dependent kcp no longer has, or that names another VPC now, is dropped; one still naming it is kept", async () => {
  const kcp = kcpWith({ [at("kept")]: vm("kept", "my-vpc"), [at("moved")]: vm("moved", "other-vpc") });
  const tally: string[] = [];
  const out = await confirmDependents(found([dep("kept"), dep("gone"), dep("moved")]), vmLookup(), kcp.read, (r) =>
    tally.push(r),
  );
  assert.deepEqual(out, found([dep("kept")]));
  assert.deepEqual(tally.sort(), ["gone", "gone", "kept"]);
  assert.deepEqual(kcp.reads.sort(), [at("gone"), at("kept"), at("moved")]);
});

test("all found gone: nothing blocks (the sequential 'delete the VM, then the VPC')", async () => {
  const out = await confirmDependents(found([dep("vm-1"), dep("vm-2")]), vmLookup(), kcpWith({}).read);
  assert.deepEqual(out, found([]));
});

test("a read that fails keeps that dependent as a blocker", async () => {
  const kcp = kcpWith({}, [at("flaky")]);
  const tally: string[] = [];
  const out = await confirmDependents(found([dep("flaky"), dep("gone")]), vmLookup(), kcp.read, (r) => tally.push(r));
  assert.deepEqual(out, found([dep("flaky")]));
  assert.deepEqual(tally.sort(), ["error", "gone"]);
});

test("no read when nothing was found, when more were found than it checks, or when the answer was cut short", async () => {
  const kcp = kcpWith({});
  const many = Array.from({ length: CONFIRM_AT_MOST + 1 }, (_, i) => dep(`vm-${i}`));
  for (const f of [found([]), found(many), found([dep("vm-0")], false)])
    assert.deepEqual(await confirmDependents(f, vmLookup(), kcp.read), f);
  assert.deepEqual(kcp.reads, []);
});

test("the target itself never confirms as its own dependent", async () => {
  const lookup = vmLookup({ self: { namespace: "default", name: "self-vm" } });
  const out = await confirmDependents(
    found([dep("self-vm")]),
    lookup,
    kcpWith({ [at("self-vm")]: vm("self-vm", "my-vpc") }).read,
  );
  assert.deepEqual(out, found([]));
});
