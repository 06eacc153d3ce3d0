// `kubectl dependencies teardown` on real kcp, run as kubectl runs the plugin, with the consumer's own ServiceAccount
// token (never kcp-admin); the network provider's rules are written with its own token. The demo topology plus a
// network-provider rule (Subnets depend on their VPC) gives a cross-provider chain VM → Subnet → VPC:
// the plan lists three waves in that order; the run (no dry run: refused DELETEs delete nothing) empties the namespace
// with no ordering violation (judged by kcp's resourceVersions from watches) while the test plays a backend that holds each VM with a
// finalizer for a moment; a cycle (a second rule, VPCs naming a subnet at .spec.cidr) is reported with exit 1.
// Then: a VM whose finalizer the test holds keeps its VPC while it is Terminating (runs bounded short report it, text
// and JSON, naming the finalizer; the run that waits deletes the VPC only after the VM is gone, by kcp's
// resourceVersions); a whole-workspace run without --yes deletes nothing; and a skip-protection PATCH (and DELETE) with
// a stale uid fails and touches nothing.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { SKIP_PROTECTION_ANNOTATION } from "../../src/api/types.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { boundTypes, kcpTeardownApi } from "../../src/plugin/commands/teardown/kcp-api.ts";
import { withSession } from "../../src/plugin/session.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import { PATHS } from "../../tools/kcp/topology.ts";
import { SUBNETS, VMS, VPCS, at, create, e2eSuite, tryDelete, vm, vpc } from "./helpers.ts";
import { watchDeletes, type Going } from "./local-targets.ts";

const e2e = e2eSuite();
const PLUGIN = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");
const FINALIZER = "backend.compute.test.io/hold";
const NETWORK = { group: "network.test.io", kind: "Subnet", resource: "subnets" };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function pluginWith(connection: string[], ...args: string[]): Promise<Run> {
  const argv = [PLUGIN, ...args, ...connection];
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

interface Seen extends Going {
  refs: string[];
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

/** The consumer1 workspace's owner: its ServiceAccount token, as a client and as the plugin's kubeconfig. */
let owner: { tenant: Tenant; kubeconfig: string } | undefined;
async function consumer(): Promise<{ ws: RestClient; connection: string[] }> {
  if (!owner) {
    const t = await tenant(e2e.kcp, PATHS.consumer1, { name: "teardown-owner" });
    owner = { tenant: t, kubeconfig: e2e.kcp.kubeconfigFor(t.token, PATHS.consumer1, "teardown-owner.kubeconfig") };
  }
  return { ws: owner.tenant.client, connection: [`--kubeconfig=${owner.kubeconfig}`] };
}

/** The network provider's rules, written with its own ServiceAccount token in its workspace. */
const networkProvider = async (): Promise<RestClient> =>
  (await tenant(e2e.kcp, PATHS.network, { name: "teardown-network" })).client;

describe("kubectl dependencies teardown on real kcp", () => {
  const NS = "teardown";
  it("plans VM → Subnet → VPC as three waves, then empties the namespace in that order", async () => {
    const { ws, connection } = await consumer();
    await create(
      await networkProvider(),
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

    const planned = await pluginWith(
      connection,
      "teardown",
      "-n",
      NS,
      "--plan",
      "-o",
      "json",
      `--workspace=${PATHS.consumer1}`,
    );
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

    const stop = new AbortController();
    const seen = await watchDeletes<Seen>(
      ws,
      { VirtualMachine: at(VMS, NS), Subnet: at(SUBNETS, NS), VPC: at(VPCS, NS) },
      stop.signal,
      (o) => ({ refs: refsOf(o.spec) }),
    );
    const released = backend(ws, NS, stop.signal);
    const r = await pluginWith(connection, "teardown", "-n", NS, "--timeout=3m", `--workspace=${PATHS.consumer1}`);
    stop.abort();
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /done: 7 object\(s\) deleted in \d+ round\(s\), \d+ delete\(s\) refused/);
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
    const { ws, connection } = await consumer();
    const vpcRule = dependencyRule("vpc-cidr-subnet", [{ resource: "subnets", field: ".spec.cidr" }], {
      dependent: { group: "network.test.io", kind: "VPC", resource: "vpcs" },
    });
    await create(await networkProvider(), vpcRule);
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const looped = vpc("vpc-c", ns);
    (looped["spec"] as { cidr: string }).cidr = "sub-c";
    await create(ws, looped, subnet("sub-c", "vpc-c", ns));
    await waitBlocked(ws, `${at(SUBNETS, ns)}/sub-c`, "VPC/vpc-c");
    await waitBlocked(ws, `${at(VPCS, ns)}/vpc-c`, "Subnet/sub-c");

    const r = await pluginWith(connection, "teardown", "-n", ns, "--timeout=1m", `--workspace=${PATHS.consumer1}`);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /NOT finished: 2 object\(s\) cannot be deleted/);
    assert.match(
      r.stdout,
      /cycle: (Subnet\/teardown-cycle\/sub-c → VPC\/teardown-cycle\/vpc-c|VPC\/teardown-cycle\/vpc-c → Subnet\/teardown-cycle\/sub-c)/,
    );
    assert.match(r.stdout, /--skip-protection /);
    assert.equal((await ws.listAll(at(VPCS, ns))).items.length, 1);
    assert.equal((await ws.listAll(at(SUBNETS, ns))).items.length, 1);
  });
});

/** The plugin as a process whose stderr the test reads while it runs (progress lines). */
function pluginLive(connection: string[], ...args: string[]): { stderr: () => string; done: Promise<Run> } {
  const child = spawn(process.execPath, [PLUGIN, ...args, ...connection], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Run>((resolve) =>
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr })),
  );
  return { stderr: () => stderr, done };
}

const escaped = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

describe("teardown as the consumer, with its own ServiceAccount token", () => {
  it("a VM held Terminating keeps its VPC: short runs report its finalizer (text and -o json); the run that waits deletes the VPC only once the VM is gone", async () => {
    const ns = "teardown-held";
    const { ws, connection } = await consumer();
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const held = vm("vm-h", { vpc: "vpc-h" }, ns);
    held.metadata.finalizers = [FINALIZER];
    await create(ws, vpc("vpc-h", ns), held);
    const vpcPath = `${at(VPCS, ns)}/vpc-h`;
    await waitBlocked(ws, vpcPath, "VirtualMachine/vm-h");
    const stop = new AbortController();
    const seen = await watchDeletes<Seen>(ws, { VirtualMachine: at(VMS, ns), VPC: at(VPCS, ns) }, stop.signal, (o) => ({
      refs: refsOf(o.spec),
    }));
    try {
      // Bounded short: the VM's delete is accepted, its finalizer holds it, the VPC stays; the report says so.
      const text = await pluginWith(connection, "teardown", "-n", ns, "--timeout=5s");
      assert.equal(text.code, 1, text.stdout + text.stderr);
      assert.match(text.stdout, /NOT finished: timed out waiting for 1 object\(s\) to go/);
      const vmRow = `VirtualMachine/${ns}/vm-h +terminating +Terminating, held by finalizer\\(s\\) ${escaped(FINALIZER)}`;
      assert.match(text.stdout, new RegExp(vmRow));
      assert.match(text.stdout, new RegExp(`VPC/${ns}/vpc-h +blocked +still referenced by VirtualMachine/${ns}/vm-h`));
      const json = await pluginWith(connection, "teardown", "-n", ns, "--timeout=5s", "-o", "json");
      assert.equal(json.code, 1, json.stdout + json.stderr);
      const report = JSON.parse(json.stdout) as {
        kind: string;
        complete: boolean;
        left: { name: string; reason: string; finalizers: string[]; blockedBy: string[] }[];
      };
      assert.equal(report.kind, "TeardownReport");
      assert.equal(report.complete, false);
      assert.deepEqual(
        report.left.map((o) => [o.name, o.reason, o.finalizers, o.blockedBy]),
        [
          ["vm-h", "terminating", [FINALIZER], []],
          ["vpc-h", "blocked", [], [`compute.test.io/virtualmachines/${ns}/vm-h`]],
        ],
      );
      assert.ok(await ws.getOptional(vpcPath), "the VPC is still there");

      // The run that waits: it reports the VM still deleting twice (progress at most every 5 s), the VPC untouched;
      // only then does the test, as the VM's backend, clear the finalizer.
      const run = pluginLive(connection, "teardown", "-n", ns, "--timeout=3m");
      await waitFor(
        "the run to report the Terminating VM twice",
        () => Promise.resolve((run.stderr().match(/2 object\(s\) left, 1 deleting/g) ?? []).length >= 2 || undefined),
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      assert.ok(await ws.getOptional(vpcPath), "the VPC waited while the VM was Terminating");
      await ws.request("PATCH", `${at(VMS, ns)}/vm-h`, {
        body: { metadata: { finalizers: null } },
        contentType: "application/merge-patch+json",
      });
      const r = await run.done;
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /done: 1 object\(s\) deleted/);
    } finally {
      stop.abort();
    }
    const vmSeen = seen.get("VirtualMachine/vm-h");
    const vpcSeen = seen.get("VPC/vpc-h");
    assert.ok(vmSeen?.deleting !== undefined && vmSeen.gone !== undefined, "the VM was deleted and went");
    assert.ok(vpcSeen?.deleting !== undefined, "the VPC was deleted");
    // 0 ordering violations by kcp's own order of events: the VPC began to go only after the VM was gone.
    assert.ok(vpcSeen.deleting > vmSeen.gone, `VPC deleted at rv ${vpcSeen.deleting}, VM gone at rv ${vmSeen.gone}`);
    assert.ok(vmSeen.deleting < vmSeen.gone, "the VM was Terminating (held) before it went");
  });

  it("--workspace without -n and without --yes deletes nothing and says why (exit 2)", async () => {
    const ns = "teardown-all";
    const { ws, connection } = await consumer();
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, vpc("vpc-w", ns));
    const before = await ws.getOptional<{ metadata: { uid: string } }>(`${at(VPCS, ns)}/vpc-w`);
    const r = await pluginWith(connection, "teardown", `--workspace=${PATHS.consumer1}`);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /nothing deleted: --workspace without -n takes down every object .* confirm with --yes/);
    const after = await ws.getOptional<{ metadata: { uid: string; deletionTimestamp?: string } }>(
      `${at(VPCS, ns)}/vpc-w`,
    );
    assert.equal(after?.metadata.uid, before?.metadata.uid);
    assert.equal(after?.metadata.deletionTimestamp, undefined);
  });

  it("a skip-protection PATCH and a DELETE with a stale uid fail and touch nothing", async () => {
    const ns = "teardown-stale";
    const { ws } = await consumer();
    const path = `${at(VPCS, ns)}/vpc-s`;
    type Meta = { metadata: { uid: string; annotations?: Record<string, string>; deletionTimestamp?: string } };
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, vpc("vpc-s", ns));
    await withSession({ kubeconfig: owner!.kubeconfig }, async (s) => {
      const api = kcpTeardownApi(s, { namespace: ns }, await boundTypes(s), new Set());
      const listed = (await api.list()).find((o) => o.name === "vpc-s");
      assert.ok(listed?.uid, "the teardown listed vpc-s with its uid");
      // Someone replaces it between the list and the writes: same name, another uid.
      await ws.request("DELETE", path);
      await waitFor("vpc-s to go", async () => (await ws.getOptional(path)) === undefined || undefined, {
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      await create(ws, vpc("vpc-s", ns));
      const now = await ws.getOptional<Meta>(path);
      assert.ok(now && now.metadata.uid !== listed.uid);
      assert.equal(await api.annotate(listed, true), "replaced");
      assert.notEqual((await api.delete(listed)).outcome, "allowed");
      const after = await ws.getOptional<Meta>(path);
      assert.equal(after?.metadata.uid, now.metadata.uid, "the new object is still there");
      assert.equal(after.metadata.annotations?.[SKIP_PROTECTION_ANNOTATION], undefined);
      assert.equal(after.metadata.deletionTimestamp, undefined);
    });
  });
});
