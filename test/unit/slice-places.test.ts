// Where a slice's spec.export.path points (src/webhook/deletion/index/export-endpoints.ts): resolved once to a
// logical cluster and compared with the export's; pending meanwhile; a path that cannot be resolved counts as the
// export's own (its URLs are still checked against the export's own path); bounded per watch.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LogicalClusterName, WorkspacePath } from "../../src/api/types.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { MAX_RESOLVED_SLICE_PATHS, SlicePlaces } from "../../src/webhook/deletion/index/export-endpoints.ts";

/** A resolver the test answers by hand, counting the questions. */
function manualResolver() {
  const asked: string[] = [];
  const pending = new Map<string, (r: Resolution) => void>();
  return {
    asked,
    resolve: (path: WorkspacePath) => {
      asked.push(path);
      return new Promise<Resolution>((r) => pending.set(path, r));
    },
    answer: async (path: string, r: Resolution) => {
      pending.get(path)!(r);
      pending.delete(path);
      await new Promise((r) => setImmediate(r));
    },
  };
}

const ok = (cluster: string): Resolution => ({ ok: true, cluster: cluster as LogicalClusterName });

describe("SlicePlaces", () => {
  it("is pending until the path resolves, then own or other, asked once and told once", async () => {
    const r = manualResolver();
    let settled = 0;
    const places = new SlicePlaces("prov" as LogicalClusterName, r.resolve, () => settled++);
    assert.equal(places.place("root:compute"), "pending");
    assert.equal(places.place("root:compute"), "pending");
    assert.deepEqual(r.asked, ["root:compute"], "one question in flight");
    await r.answer("root:compute", ok("prov"));
    assert.equal(settled, 1);
    assert.equal(places.place("root:compute"), "own");
    assert.equal(places.place("root:network"), "pending");
    await r.answer("root:network", ok("net"));
    assert.equal(places.place("root:network"), "other");
    assert.deepEqual(r.asked, ["root:compute", "root:network"], "answers are kept");
  });

  it("counts a path that names no workspace as another workspace", async () => {
    const r = manualResolver();
    const places = new SlicePlaces("prov" as LogicalClusterName, r.resolve, () => undefined);
    assert.equal(places.place("root:gone"), "pending");
    await r.answer("root:gone", { ok: false, reason: "workspace root:gone not found" });
    assert.equal(places.place("root:gone"), "other");
    assert.equal(places.place("Not A Path/../x"), "other", "not even a path: never asked");
    assert.deepEqual(r.asked, ["root:gone"]);
  });

  it("checks a slice whose path cannot be resolved as the export's own, and asks again at the next look", async () => {
    const r = manualResolver();
    let settled = 0;
    const places = new SlicePlaces("prov" as LogicalClusterName, r.resolve, () => settled++);
    places.place("root:org:compute");
    await r.answer("root:org:compute", { ok: false, reason: "403", transient: true });
    assert.equal(places.place("root:org:compute"), "own");
    assert.equal(r.asked.length, 2, "asked again");
    await r.answer("root:org:compute", ok("other"));
    assert.equal(settled, 2);
    assert.equal(places.place("root:org:compute"), "other");
  });

  it("resolves at most MAX_RESOLVED_SLICE_PATHS paths per watch; past them, slices are checked as the export's own", () => {
    const r = manualResolver();
    const places = new SlicePlaces("prov" as LogicalClusterName, r.resolve, () => undefined);
    for (let i = 0; i < MAX_RESOLVED_SLICE_PATHS; i++) assert.equal(places.place(`root:p${i}`), "pending");
    assert.equal(places.place("root:one-more"), "own");
    assert.equal(r.asked.length, MAX_RESOLVED_SLICE_PATHS);
  });
});
