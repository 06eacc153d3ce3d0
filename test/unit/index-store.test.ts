// The dependents index's store against the live finder's matching (matchingDependents over the same objects): the
// same dependents for every lookup, whatever was written, updated and deleted before it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Dependent, Lookup } from "../../src/webhook/admission.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { matchingDependents } from "../../src/webhook/deletion/matching.ts";
import { NotIndexedError, ReferenceStore } from "../../src/webhook/deletion/index/store.ts";
import { objectKey, type KubeObject } from "../../src/kcp/informer.ts";
import { compareStrings } from "../../src/util/json.ts";
import { fp, vmLookup } from "./helpers-rules.ts";

const VPC = fp(".spec.vpcRef.name");
const NICS = fp(".spec.nics[*].subnetRef.name");

const lookup = (o: Partial<Lookup> = {}): Lookup =>
  vmLookup({ consumer: "c1" as LogicalClusterName, name: "v1", ...o });

function vm(cluster: string, namespace: string | undefined, name: string, vpc: unknown, subnets: unknown[] = []) {
  return {
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      annotations: { "kcp.io/cluster": cluster },
    },
    spec: { vpcRef: { name: vpc }, nics: subnets.map((s) => ({ subnetRef: { name: s } })) },
  };
}

/** Writes `obj` as the informer does, under its objectKey; returns the key. */
function put(s: ReferenceStore, obj: unknown): string {
  const key = objectKey(obj as KubeObject);
  s.set(key, obj);
  return key;
}

const sorted = (ds: readonly Dependent[]): string[] =>
  ds.map((d) => `${d.namespace ?? ""}/${d.name}@${d.field}`).sort(compareStrings);

describe("ReferenceStore", () => {
  it("finds dependents by workspace, namespace and referenced name, with the field that names the target", () => {
    const s = new ReferenceStore([NICS, VPC]);
    put(s, vm("c1", "ns", "a", "v1"));
    put(s, vm("c1", "other", "b", "v1"));
    put(s, vm("c2", "ns", "c", "v1"));
    put(s, vm("c1", "ns", "d", "v2", ["v1"]));
    assert.deepEqual(sorted(s.find(lookup({ namespace: "ns" }), 10).dependents), ["ns/a@.spec.vpcRef.name"]);
    assert.deepEqual(sorted(s.find(lookup({ namespace: "ns", fieldPaths: [VPC, NICS] }), 10).dependents), [
      "ns/a@.spec.vpcRef.name",
      "ns/d@.spec.nics[*].subnetRef.name",
    ]);
    // Cluster-scoped target: every namespace of the workspace, never another workspace.
    assert.deepEqual(sorted(s.find(lookup(), 10).dependents), ["ns/a@.spec.vpcRef.name", "other/b@.spec.vpcRef.name"]);
  });

  it("forgets the old references on update and everything on delete", () => {
    const s = new ReferenceStore([VPC]);
    put(s, vm("c1", "ns", "a", "v1"));
    const key = put(s, vm("c1", "ns", "a", "v2"));
    assert.equal(s.find(lookup({ namespace: "ns" }), 10).dependents.length, 0);
    assert.equal(s.find(lookup({ namespace: "ns", name: "v2" }), 10).dependents.length, 1);
    s.delete(key);
    assert.equal(s.find(lookup({ namespace: "ns", name: "v2" }), 10).dependents.length, 0);
    assert.equal(s.size, 0);
  });

  it("finds a record to delete by the parts of the informer's key, cluster-scoped ones too", () => {
    const s = new ReferenceStore([VPC]);
    const cluster = put(s, vm("c1", undefined, "a", "v1"));
    const namespaced = put(s, vm("c1", "ns", "a", "v1"));
    assert.equal(cluster, "c1//a");
    s.delete("c1/a"); // not a key of the informer's: nothing to take apart
    s.delete("c2/ns/a");
    assert.equal(s.size, 2);
    s.delete(cluster);
    assert.deepEqual(sorted(s.find(lookup(), 10).dependents), ["ns/a@.spec.vpcRef.name"]);
    s.delete(namespaced);
    assert.equal(s.size, 0);
    assert.equal(s.hasCluster("c1"), false);
  });

  it("stops past the limit and says so", () => {
    const s = new ReferenceStore([VPC]);
    for (let i = 0; i < 50; i++) put(s, vm("c1", "ns", `vm${i}`, "v1"));
    const r = s.find(lookup({ namespace: "ns" }), 10);
    assert.equal(r.dependents.length, 11);
    assert.equal(r.complete, false);
  });

  it("never counts the target as its own dependent", () => {
    const s = new ReferenceStore([VPC]);
    put(s, vm("c1", "ns", "v1", "v1"));
    assert.equal(s.find(lookup({ namespace: "ns", self: { namespace: "ns", name: "v1" } }), 10).dependents.length, 0);
  });

  it("counts an object too large to read as referencing (fail closed), like the live finder", () => {
    const s = new ReferenceStore([NICS], 100);
    put(
      s,
      vm(
        "c1",
        "ns",
        "big",
        "x",
        Array.from({ length: 500 }, (_, i) => `s${i}`),
      ),
    );
    const r = s.find(lookup({ namespace: "ns", name: "anything", fieldPaths: [NICS] }), 10);
    assert.deepEqual(sorted(r.dependents), ["ns/big@.spec.nics[*].subnetRef.name"]);
    assert.equal(
      s.find(lookup({ namespace: "elsewhere", name: "anything", fieldPaths: [NICS] }), 10).dependents.length,
      0,
    );
  });

  it("refuses a path it does not index instead of answering 'none'", () => {
    const s = new ReferenceStore([VPC]);
    assert.throws(() => s.find(lookup({ fieldPaths: [NICS] }), 10), NotIndexedError);
  });

  it("agrees with the live finder's matching after any sequence of writes (property)", () => {
    const names = fc.constantFrom("v1", "v2", "v3");
    const object = fc.record({
      cluster: fc.constantFrom("c1", "c2"),
      namespace: fc.constantFrom("ns", "other"),
      name: fc.constantFrom("a", "b", "c", "v1"),
      vpc: fc.oneof(names, fc.constant(42), fc.constant(null)),
      subnets: fc.array(fc.oneof(names, fc.constant(7)), { maxLength: 3 }),
    });
    const op = fc.oneof(
      object.map((o) => ({ kind: "set" as const, o })),
      object.map((o) => ({ kind: "delete" as const, o })),
    );
    const query = fc.record({
      namespace: fc.constantFrom(undefined, "ns", "other"),
      name: names,
      paths: fc.constantFrom([VPC], [NICS], [VPC, NICS]),
      self: fc.boolean(),
    });
    fc.assert(
      // A type is namespaced or cluster-scoped, never both.
      fc.property(fc.array(op, { maxLength: 40 }), query, fc.boolean(), (ops, q, clusterScoped) => {
        const store = new ReferenceStore([VPC, NICS]);
        const truth = new Map<string, KubeObject>();
        for (const { kind, o } of ops) {
          const ns = clusterScoped ? undefined : o.namespace;
          const obj = vm(o.cluster, ns, o.name, o.vpc, o.subnets) as unknown as KubeObject;
          const key = objectKey(obj);
          if (kind === "set") {
            store.set(key, obj);
            truth.set(key, obj);
          } else {
            store.delete(key);
            truth.delete(key);
          }
        }
        const l = lookup({
          name: q.name,
          fieldPaths: q.paths,
          ...(q.namespace ? { namespace: q.namespace } : {}),
          ...(q.self ? { self: { ...(q.namespace ? { namespace: q.namespace } : {}), name: q.name } } : {}),
        });
        // What the live finder would list: the consumer's objects, in the target's namespace for a namespaced type
        // (a cluster-scoped type answers 404 there and is listed cluster-wide).
        const listed = [...truth.values()].filter(
          (o) =>
            o.metadata.annotations?.["kcp.io/cluster"] === "c1" &&
            (q.namespace === undefined || clusterScoped || o.metadata.namespace === q.namespace),
        );
        assert.deepEqual(sorted(store.find(l, 1000).dependents), sorted(matchingDependents(listed, l)));
      }),
      { numRuns: 2000 },
    );
  });
});
