// `kubectl dependencies teardown` on real kcp, run as kubectl runs the plugin, with the admin's kubeconfig. The demo
// topology plus a network-provider rule (Subnets depend on their VPC) gives a cross-provider chain VM → Subnet → VPC:
// the plan lists three waves in that order; the run empties the namespace with no refused delete and no ordering
// violation (judged by kcp's resourceVersions from watches) while the test plays a backend that holds each VM with a
// finalizer for a moment; a cycle (a second rule, VPCs naming a subnet at .spec.cidr) is reported with exit 1.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import type { RestClient } from "../../src/kcp/rest.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { PATHS } from "../../tools/kcp/topology.ts";
import { SUBNETS, VMS, VPCS, at, create, e2eSuite, tryDelete, vm, vpc } from "./helpers.ts";

const e2e = e2eSuite();
const PLUGIN = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");
const FINALIZER = "backend.compute.test.io/hold";
const NETWORK = { group: "network.test.io", kind: "Subnet", resource: "subnets" };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function plugin(...args: string[]): Promise<Run> {
  const argv = [PLUGIN, ...args, `--kubeconfig=${e2e.kcp.adminKubeconfig}`, "--context=base"];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { timeout: 240_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const subnet = (name: string, vpcName: string, ns: string) => ({
  apiVersion: "network.test.io/v1",
  kind: "Subnet",
  metadata: { name, namespace: ns },
  spec: { vpcRef: { name: vpcName } },
});

/** Waits until a dry-run delete of `path` is refused naming `blocker`. */
async function waitBlocked(ws: RestClient, path: string, blocker: string): Promise<void> {
  await waitFor(
    `${path} refused naming ${blocker}`,
    async () => {
      const r = await tryDelete(ws, path, { dryRun: true });
      return (!r.allowed && r.message.includes(blocker)) || undefined;
    },
    { timeoutMs: 90_000, intervalMs: 300 },
  );
}

interface Seen {
  /** resourceVersion at which the delete was accepted (deletionTimestamp set, or DELETED). */
  deleting?: bigint;
  gone?: bigint;
  refs: string[];
}

/** Watches one collection and records, by kcp's resourceVersions, when each object began to go and went. */
function observe(ws: RestClient, collection: string, kind: string, seen: Map<string, Seen>, signal: AbortSignal) {
  type Obj = { metadata: { name: string; resourceVersion: string; deletionTimestamp?: string }; spec?: unknown };
  return new Promise<void>((opened, failed) => {
    ws.watch<Obj>(
      collection,
      {},
      (ev) => {
        const id = `${kind}/${ev.object.metadata.name}`;
        const rv = BigInt(ev.object.metadata.resourceVersion);
        const s = seen.get(id) ?? { refs: refsOf(ev.object.spec) };
        if ((ev.type === "DELETED" || ev.object.metadata.deletionTimestamp) && s.deleting === undefined)
          s.deleting = rv;
        if (ev.type === "DELETED") s.gone = rv;
        seen.set(id, s);
      },
      signal,
      opened,
    ).catch((err: unknown) => {
      if (!signal.aborted) failed(err instanceof Error ? err : new Error(String(err)));
    });
  });
}

function refsOf(spec: unknown): string[] {
  const s = (spec ?? {}) as { vpcRef?: { name?: string }; subnetRef?: { name?: string } };
  return [
    ...(s.vpcRef?.name ? [`VPC/${s.vpcRef.name}`] : []),
    ...(s.subnetRef?.name ? [`Subnet/${s.subnetRef.name}`] : []),
  ];
}

/** The test as the VMs' backend: a VM being deleted keeps its finalizer for one more poll, then it is released. */
async function backend(ws: RestClient, ns: string, signal: AbortSignal): Promise<number> {
  const noticed = new Set<string>();
  let released = 0;
  while (!signal.aborted) {
    type V = { metadata: { name: string; deletionTimestamp?: string; finalizers?: string[] } };
    const list = await ws.listAll<V>(at(VMS, ns));
    for (const v of list.items) {
      if (!v.metadata.deletionTimestamp || !v.metadata.finalizers?.includes(FINALIZER)) continue;
      if (!noticed.has(v.metadata.name)) {
        noticed.add(v.metadata.name);
        continue;
      }
      await ws.request("PATCH", `${at(VMS, ns)}/${v.metadata.name}`, {
        body: { metadata: { finalizers: null } },
        contentType: "application/merge-patch+json",
      });
      released++;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return released;
}

describe("kubectl dependencies teardown on real kcp", () => {
  const NS = "teardown";
  it("plans VM → Subnet → VPC as three waves, then empties the namespace in that order", async () => {
    const ws = e2e.kcp.ws(PATHS.consumer1);
    await create(
      e2e.kcp.ws(PATHS.network),
      dependencyRule("subnet-dependencies", [{ resource: "vpcs" }], { dependent: NETWORK }),
    );
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    const vms = [1, 2, 3].map((i) => {
      const v = vm(`vm-${i}`, { vpc: "vpc-a", subnet: `sub-${i % 2}` }, NS);
      v.metadata.finalizers = [FINALIZER];
      return v;
    });
    await create(
      ws,
      vpc("vpc-a", NS),
      vpc("vpc-b", NS),
      subnet("sub-0", "vpc-a", NS),
      subnet("sub-1", "vpc-b", NS),
      ...vms,
    );
    await waitBlocked(ws, `${at(VPCS, NS)}/vpc-b`, "Subnet/sub-1");
    await waitBlocked(ws, `${at(SUBNETS, NS)}/sub-1`, "VirtualMachine/vm-1");

    const planned = await plugin("teardown", "-n", NS, "--plan", "-o", "json", `--workspace=${PATHS.consumer1}`);
    assert.equal(planned.code, 0, planned.stdout + planned.stderr);
    const plan = JSON.parse(planned.stdout) as {
      kind: string;
      complete: boolean;
      waves: string[][];
      finalizerHolds: { id: string; finalizers: string[] }[];
    };
    assert.equal(plan.kind, "TeardownPlan");
    assert.equal(plan.complete, true);
    const kinds = plan.waves.map((w) => [...new Set(w.map((id) => id.split("/")[1]))]);
    assert.deepEqual(kinds, [["virtualmachines"], ["subnets"], ["vpcs"]]);
    assert.deepEqual(plan.waves.flat().length, 7);
    assert.equal(plan.finalizerHolds.length, 3);

    const seen = new Map<string, Seen>();
    const stop = new AbortController();
    await Promise.all([
      observe(ws, at(VMS, NS), "VirtualMachine", seen, stop.signal),
      observe(ws, at(SUBNETS, NS), "Subnet", seen, stop.signal),
      observe(ws, at(VPCS, NS), "VPC", seen, stop.signal),
    ]);
    const released = backend(ws, NS, stop.signal);
    const r = await plugin("teardown", "-n", NS, "--timeout=3m", `--workspace=${PATHS.consumer1}`);
    stop.abort();
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /done: 7 object\(s\) deleted in \d+ round\(s\), 0 delete\(s\) refused/);
    assert.match(r.stderr, /^round 1: 7 object\(s\) left/m);
    assert.equal(await released, 3, "each VM was held by its finalizer until the backend let it go");
    for (const c of [VMS, SUBNETS, VPCS]) assert.deepEqual((await ws.listAll(at(c, NS))).items, []);

    // No object began to go before everything that named it was gone, by kcp's own order of events.
    const violations: string[] = [];
    for (const [id, s] of seen)
      for (const ref of s.refs) {
        const target = seen.get(ref);
        if (!target?.deleting || !s.gone || target.deleting < s.gone) violations.push(`${ref} before ${id}`);
      }
    assert.deepEqual(violations, []);
    assert.equal(seen.size, 7);
  });

  it("a cycle is reported with its objects and exit 1, and nothing on it is deleted", async () => {
    const ns = "teardown-cycle";
    const ws = e2e.kcp.ws(PATHS.consumer1);
    const vpcRule = dependencyRule("vpc-cidr-subnet", [{ resource: "subnets", field: ".spec.cidr" }], {
      dependent: { group: "network.test.io", kind: "VPC", resource: "vpcs" },
    });
    await create(e2e.kcp.ws(PATHS.network), vpcRule);
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const looped = vpc("vpc-c", ns);
    (looped["spec"] as { cidr: string }).cidr = "sub-c";
    await create(ws, looped, subnet("sub-c", "vpc-c", ns));
    await waitBlocked(ws, `${at(SUBNETS, ns)}/sub-c`, "VPC/vpc-c");
    await waitBlocked(ws, `${at(VPCS, ns)}/vpc-c`, "Subnet/sub-c");

    const r = await plugin("teardown", "-n", ns, "--timeout=1m", `--workspace=${PATHS.consumer1}`);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /NOT finished: 2 object\(s\) cannot be deleted in any order/);
    assert.match(
      r.stdout,
      /cycle: (Subnet\/teardown-cycle\/sub-c → VPC\/teardown-cycle\/vpc-c|VPC\/teardown-cycle\/vpc-c → Subnet\/teardown-cycle\/sub-c)/,
    );
    assert.match(r.stdout, /--skip-protection /);
    assert.equal((await ws.listAll(at(VPCS, ns))).items.length, 1);
    assert.equal((await ws.listAll(at(SUBNETS, ns))).items.length, 1);
  });
});
