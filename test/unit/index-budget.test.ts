// The index's budgets on fake data: a consumer that names too many objects, names things no object can be called, or
// has more dependents than its budget is kept unread in O(1), and only its own lookups of that type are refused
// (503, naming nothing); every other workspace is answered as before.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import pino from "pino";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { Lookup } from "../../src/webhook/admission.ts";
import { canNameObject, MAX_NAME_LENGTH } from "../../src/webhook/deletion/index/budget.ts";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { ReferenceStore } from "../../src/webhook/deletion/index/store.ts";
import { fp, vmLookup } from "./helpers-rules.ts";
import { fakeWatches, registryOf, vmObject, vmType } from "./index-fake-watch.ts";

const VPC = fp(".spec.vpcRef.name");
const NICS = fp(".spec.nics[*].subnetRef.name");

const lookup = (consumer: string, name: string, o: Partial<Lookup> = {}): Lookup =>
  vmLookup({ consumer: consumer as LogicalClusterName, name, namespace: "ns", ...o });

function vm(cluster: string, name: string, vpc: unknown, subnets: unknown[] = [], namespace = "ns") {
  return {
    metadata: { name, namespace, annotations: { "kcp.io/cluster": cluster } },
    spec: { vpcRef: { name: vpc }, nics: subnets.map((s) => ({ subnetRef: { name: s } })) },
  };
}

const many = (n: number, prefix = "s"): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("canNameObject", () => {
  it("takes DNS subdomains up to 253 characters and nothing else", () => {
    for (const ok of ["a", "my-vpc", "a.b-c.d", "0", "x".repeat(MAX_NAME_LENGTH)]) assert.ok(canNameObject(ok), ok);
    for (const no of ["", "x".repeat(MAX_NAME_LENGTH + 1), "My-VPC", "a/b", "-a", "a-", "a..b", ".a", "a b"])
      assert.ok(!canNameObject(no), no);
  });
});

describe("ReferenceStore budgets", () => {
  it("keeps no value that cannot name an object, so a 1 MiB string costs the object's key only", () => {
    const s = new ReferenceStore([VPC]);
    const huge = "a".repeat(1 << 20);
    s.set("c1/ns/big", vm("c1", "big", huge));
    const [rec] = [...s.values()];
    assert.deepEqual(rec!.names, [[]]);
    assert.deepEqual(s.find(lookup("c1", "a"), 10), { dependents: [], complete: true });
    assert.equal(s.unreadable.names + s.unreadable.budget, 0);
  });

  it("holds an object naming more than the cap unreadable, and only its own workspace and namespace see it", () => {
    const s = new ReferenceStore([VPC, NICS], undefined, { maxNamesPerObject: 100 });
    s.set("c1/ns/hostile", vm("c1", "hostile", "v0", many(200_000)));
    s.set("c1/ns/ok", vm("c1", "ok", "v1"));
    s.set("c2/ns/ok", vm("c2", "ok", "s5"));
    assert.equal(s.unreadable.names, 1);
    assert.deepEqual([...s.values()].find((r) => r.name === "hostile")!.names, [null, null]);
    const own = s.find(lookup("c1", "anything", { fieldPaths: [NICS] }), 10);
    assert.equal(own.unreadable, "names");
    const other = s.find(lookup("c2", "s5", { fieldPaths: [VPC, NICS] }), 10);
    assert.equal(other.unreadable, undefined);
    assert.deepEqual(
      other.dependents.map((d) => d.name),
      ["ok"],
    );
    assert.equal(s.find(lookup("c1", "v1", { namespace: "elsewhere" }), 10).unreadable, undefined);
    s.delete("c1/ns/hostile");
    assert.equal(s.find(lookup("c1", "anything"), 10).unreadable, undefined);
    assert.equal(s.unreadable.names, 0);
  });

  it("holds a workspace's dependents past its object budget unreadable until it is back under", () => {
    const s = new ReferenceStore([VPC], undefined, { maxObjectsPerWorkspace: 3 });
    for (let i = 0; i < 5; i++) s.set(`c1/ns/vm${i}`, vm("c1", `vm${i}`, `v${i}`));
    s.set("c2/ns/vm", vm("c2", "vm", "v0"));
    assert.equal(s.unreadable.budget, 2);
    assert.deepEqual(s.workspacesUnreadable(), { names: 0, budget: 1, share: 0 });
    assert.equal(s.find(lookup("c1", "v0"), 10).unreadable, "budget");
    assert.deepEqual(s.find(lookup("c2", "v0"), 10), {
      dependents: [{ namespace: "ns", name: "vm", field: VPC.source }],
      complete: true,
    });
    s.delete("c1/ns/vm3");
    s.delete("c1/ns/vm4");
    assert.equal(s.find(lookup("c1", "v0"), 10).unreadable, undefined);
    assert.equal(s.unreadable.budget, 0);
  });

  it("charges a workspace the heap its dependents cost (INDEX_COST), characters of names included", () => {
    // One dependent: 120 + 1 (its name) + 63 + 60 (the name it references) = 244 bytes; two do not fit in 400.
    const s = new ReferenceStore([VPC], undefined, { maxBytesPerWorkspace: 400 });
    s.set("c1/ns/a", vm("c1", "a", "x".repeat(60)));
    s.set("c1/ns/b", vm("c1", "b", "y".repeat(60)));
    assert.equal(s.unreadable.budget, 1);
    assert.equal(s.find(lookup("c1", "z"), 10).unreadable, "budget");
    assert.equal(s.find(lookup("c2", "z"), 10).unreadable, undefined);
  });

  it("never lets one workspace's writes change another's answers (property)", () => {
    const budget = { maxNamesPerObject: 3, maxObjectsPerWorkspace: 4, maxBytesPerWorkspace: 1_200 };
    const name = fc.constantFrom("v1", "v2", "v3", "v4", "BAD", "x".repeat(300));
    const hostileOp = fc.record({
      del: fc.boolean(),
      id: fc.integer({ min: 0, max: 9 }),
      vpc: name,
      subnets: fc.array(name, { maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.array(hostileOp, { maxLength: 30 }), fc.constantFrom("v1", "v2", "v3"), (ops, target) => {
        const calm = (s: ReferenceStore): void => {
          s.set("c2/ns/a", vm("c2", "a", "v1", ["v2"]));
          s.set("c2/ns/b", vm("c2", "b", "v3"));
        };
        const alone = new ReferenceStore([VPC, NICS], undefined, budget);
        calm(alone);
        // The calm workspace writes between the hostile one's writes: before, in the middle and after.
        const shared = new ReferenceStore([VPC, NICS], undefined, budget);
        ops.forEach((o, i) => {
          if (i === Math.floor(ops.length / 2)) calm(shared);
          const key = `c1/ns/h${o.id}`;
          if (o.del) shared.delete(key);
          else shared.set(key, vm("c1", `h${o.id}`, o.vpc, o.subnets));
        });
        calm(shared);
        const l = lookup("c2", target, { fieldPaths: [VPC, NICS] });
        assert.deepEqual(shared.find(l, 10), alone.find(l, 10));
      }),
      { numRuns: 500 },
    );
  });
});

describe("DependentsIndex: an unreadable dependent refuses its own workspace's deletes only", () => {
  it("answers 503 naming nothing to the hostile workspace, and the others as before", async () => {
    const { factory, built } = fakeWatches();
    const index = new DependentsIndex({ watch: factory, logger: pino({ level: "silent" }) });
    index.follow(registryOf(vmType(".spec.nics[*].vpcRef.name", ".spec.vpcRef.name")));
    const hostile = vmObject("hostile", "vm-h", "my-vpc") as { spec: { nics: unknown[] } };
    hostile.spec.nics = many(5_000).map((name) => ({ vpcRef: { name } }));
    const store = built[0]!.watch.endpoint("https://shard", [hostile, vmObject("calm", "vm-c", "my-vpc")]).store;
    assert.equal(store.unreadable.names, 1);
    const own = await index.find(vmLookup({ consumer: "hostile" as LogicalClusterName }), 10);
    assert.equal(own.ok, false);
    assert.ok(!own.ok && /cannot read every virtualmachines/.test(own.message) && !own.message.includes("vm-h"));
    const calm = await index.find(vmLookup({ consumer: "calm" as LogicalClusterName }), 10);
    assert.ok(calm.ok);
    assert.deepEqual(
      calm.dependents.map((d) => d.name),
      ["vm-c"],
    );
    assert.deepEqual(index.unreadable(), {
      objects: { names: 1, budget: 0, share: 0 },
      workspaces: { names: 1, budget: 0, share: 0 },
    });
  });
});
