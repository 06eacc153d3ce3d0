// The kubectl plugin on real kcp, run as a process the way kubectl runs it, as a tenant with its own ServiceAccount
// token in a kubeconfig wherever a tenant can ask (kcp-admin sets the topology up, as the platform operator):
// `why` as consumer1 prints every blocker the webhook denies with (past the message's cap of ten, through kcp's
// status.details.causes), exits 1, then 0 once the dependents are gone; `graph` as the compute provider draws its
// rule; `check` finds a planted dangling reference; a user without rights gets a sentence, not a stack trace. The
// single-file build (hack/plugin/build.ts, Node's SEA), alone in an empty directory on a PATH without Node, answers
// `why` as the source. A consumer asks `why` about a VM held in Terminating by a finalizer (its name, owner and age),
// about the VPC that VM still blocks (refused as ever), and about the namespace being deleted around them.
// A tenant's token is scoped to its workspace: no tenant may list root (the default walk for rules), and a consumer's
// `--rule-workspace` of its provider is refused (403; on kcp v0.30.0 even after the provider bound get/list on its
// rules and workspace access to system:authenticated, which let a static-token user read them). So which rule each
// blocker comes from, and `check` of a consumer's workspace, are asked by the operator (kcp-admin), who reads both.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { startKcp } from "../../tools/kcp/harness.ts";
import { PATHS, TOKENS } from "../../tools/kcp/topology.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { VMS, VPCS, at, create, e2eSuite, tryDelete, vm, vpc, waitForProtection } from "./helpers.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import type { WhyDocument } from "../../src/plugin/commands/why/report.ts";
import { buildBinary } from "../../hack/plugin/build.ts";

const OUTSIDER = { token: "outsider-token", user: "outsider" };
const e2e = e2eSuite(() => startKcp({ tokens: [...TOKENS, OUTSIDER] }));

const PLUGIN = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking the event loop (kcp's log pipe must keep draining). */
function exec(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Each workspace's owner: its ServiceAccount token as a client and as the plugin's kubeconfig, made once. */
const owners = new Map<string, { tenant: Tenant; kubeconfig: string }>();
async function owner(workspace: string): Promise<{ tenant: Tenant; kubeconfig: string }> {
  let o = owners.get(workspace);
  if (!o) {
    const t = await tenant(e2e.kcp, workspace, { name: "plugin-owner" });
    const file = `plugin-owner-${workspace.replace(/:/g, "_")}.kubeconfig`;
    o = { tenant: t, kubeconfig: e2e.kcp.kubeconfigFor(t.token, workspace, file) };
    owners.set(workspace, o);
  }
  return o;
}

/** The plugin as the owner of `workspace` (its token; the kubeconfig's server is that workspace). */
async function as(workspace: string, ...args: string[]): Promise<Run> {
  return exec(process.execPath, [PLUGIN, ...args, `--kubeconfig=${(await owner(workspace)).kubeconfig}`]);
}

/**
 * The plugin as the platform operator (kcp-admin), for the one thing no tenant can ask: which rule each blocker comes
 * from, or whether a consumer's objects match a provider's rules, needs one identity that reads both workspaces, and
 * a tenant's token is refused in every workspace but its own (docs/plugin.md: "providers, operators").
 */
function asOperator(workspace: string, ...args: string[]): Promise<Run> {
  return exec(process.execPath, [
    PLUGIN,
    ...args,
    `--kubeconfig=${e2e.kcp.adminKubeconfig}`,
    "--context=base",
    `--workspace=${workspace}`,
  ]);
}

/** A tenant naming another workspace's rules: refused (kcp answers its scoped token 403 there) in a sentence, exit 2. */
function assertRulesRefused(r: Run, provider: string): void {
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`^error: you may not read dependencyrules in ${provider}$`, "m"));
  assertNoStackTrace(r);
}

async function which(command: string): Promise<string> {
  const r = await exec("/bin/sh", ["-c", `command -v ${command}`]);
  assert.equal(r.code, 0, `${command} is on PATH`);
  return r.stdout.trim();
}

const VM_NAMES = Array.from({ length: 12 }, (_, i) => `vm-${String(i + 1).padStart(2, "0")}`);

function assertNoStackTrace(r: Run): void {
  assert.doesNotMatch(r.stderr, /^\s+at /m, r.stderr);
}

describe("kubectl dependencies on real kcp", () => {
  it("why: every blocker of a refused delete (12, past the message's 10) from causes; exit 1, then 0", async () => {
    const me = await owner(PATHS.consumer1);
    const ws = me.tenant.client;
    await create(ws, vpc("big-vpc"), ...VM_NAMES.map((n) => vm(n, { vpc: "big-vpc" })));
    const target = `${at(VPCS)}/big-vpc`;
    await waitForProtection(ws, target, true);

    // What the webhook denies a real DELETE with: ten names and "and 2 more". The index takes each VM in a few
    // milliseconds after its create (docs/architecture.md, "Consistency"), so wait until it has all twelve.
    const message = await waitFor("a denial naming ten VMs and 2 more", async () => {
      const denied = await tryDelete(ws, target, { dryRun: true });
      return !denied.allowed && / and 2 more$/.test(denied.message) ? denied.message : undefined;
    });
    const denied = await tryDelete(ws, target);
    assert.equal(denied.allowed, false);
    assert.match(denied.allowed ? "" : denied.message, /still referenced by .* and 2 more$/);
    const named = [...message.matchAll(/VirtualMachine\/(vm-\d+)/g)].map((m) => m[1]);
    assert.equal(named.length, 10);

    const r = await as(PATHS.consumer1, "why", "vpc/big-vpc", "-n", "default");
    assert.equal(r.code, 1, r.stdout + r.stderr);
    // kcp v0.30.0 passes the webhook's status.details.causes through to the client: the plugin says so.
    assert.match(r.stdout, /still referenced by 12 objects \(from the webhook's status\.details\.causes\)/);
    assert.match(
      r.stdout,
      /refused by: admission webhook "dependency-controller\.dependencies\.opendefense\.cloud" \(409 Conflict\)/,
    );
    for (const n of VM_NAMES)
      assert.match(r.stdout, new RegExp(`VirtualMachine\\s+default\\s+${n}\\s+\\.spec\\.vpcRef\\.name`));
    for (const n of named) assert.ok(r.stdout.includes(n!), `${n} of the denial message is in the plugin's list`);
    assert.match(r.stdout, new RegExp(`kubectl delete virtualmachine ${VM_NAMES.join(" ")} -n default`));

    // The consumer may not read the compute provider's rules, so it cannot ask which rule each blocker comes from;
    // the operator, who may read both workspaces, can.
    assertRulesRefused(
      await as(PATHS.consumer1, "why", "vpc/big-vpc", "--rule-workspace", PATHS.compute),
      PATHS.compute,
    );
    const withRule = await asOperator(PATHS.consumer1, "why", "vpc/big-vpc", "--rule-workspace", PATHS.compute);
    assert.equal(withRule.code, 1, withRule.stderr);
    assert.match(withRule.stdout, /vm-12\s+\.spec\.vpcRef\.name\s+root:compute-provider:vm-dependencies/);

    // The same through kubectl itself, which finds the plugin on PATH.
    const bin = path.join(e2e.kcp.rootDir, "plugin-bin");
    const wrapper = path.join(bin, "kubectl-dependencies");
    await exec("mkdir", ["-p", bin]);
    writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${PLUGIN}" "$@"\n`);
    chmodSync(wrapper, 0o755);
    const viaKubectl = await exec(
      "kubectl",
      [
        "dependencies",
        "why",
        "vpcs.network.test.io/big-vpc",
        `--kubeconfig=${me.kubeconfig}`,
        `--workspace=${PATHS.consumer1}`,
      ],
      { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}` },
    );
    assert.equal(viaKubectl.code, 1, viaKubectl.stderr);
    assert.match(viaKubectl.stdout, /still referenced by 12 objects/);

    for (const n of VM_NAMES) await ws.request("DELETE", `${at(VMS)}/${n}`);
    await waitForProtection(ws, target, false);
    const after = await as(PATHS.consumer1, "why", "vpc/big-vpc");
    assert.equal(after.code, 0, after.stdout + after.stderr);
    assert.match(after.stdout, /vpcs\/big-vpc \(root:consumer1, namespace default\): can be deleted now/);
  });

  it("the single-file plugin, alone on a PATH without Node, answers why as the source does", async () => {
    const me = await owner(PATHS.consumer2);
    const ws = me.tenant.client;
    await create(ws, vpc("sea-vpc"), vm("sea-vm", { vpc: "sea-vpc" }));
    await waitForProtection(ws, `${at(VPCS)}/sea-vpc`, true);
    const built = buildBinary(path.join(e2e.kcp.rootDir, "plugin-build"));
    // Two directories and nothing else on PATH: the plugin copied alone, and kubectl.
    const alone = path.join(e2e.kcp.rootDir, "plugin-alone");
    const tools = path.join(e2e.kcp.rootDir, "kubectl-only");
    mkdirSync(alone);
    mkdirSync(tools);
    copyFileSync(built, path.join(alone, "kubectl-dependencies"));
    chmodSync(path.join(alone, "kubectl-dependencies"), 0o755);
    symlinkSync(realpathSync(await which("kubectl")), path.join(tools, "kubectl"));
    const env = { PATH: `${alone}:${tools}`, HOME: alone };
    assert.notEqual((await exec("/bin/sh", ["-c", "command -v node"], env)).code, 0, "no node on this PATH");
    const flags = [`--kubeconfig=${me.kubeconfig}`];

    const single = await exec(path.join(tools, "kubectl"), ["dependencies", "why", "vpc/sea-vpc", ...flags], env);
    const source = await exec(process.execPath, [PLUGIN, "why", "vpc/sea-vpc", ...flags]);
    assert.equal(source.code, 1, source.stdout + source.stderr);
    assert.match(source.stdout, /still referenced by 1 object/);
    assert.deepEqual(single, source, "the single file answers as the source");

    await ws.request("DELETE", `${at(VMS)}/sea-vm`);
    await waitForProtection(ws, `${at(VPCS)}/sea-vpc`, false);
    const free = await exec(path.join(tools, "kubectl"), ["dependencies", "why", "vpc/sea-vpc", ...flags], env);
    assert.equal(free.code, 0, free.stdout + free.stderr);
    assert.match(free.stdout, /vpcs\/sea-vpc \(root:consumer2, namespace default\): can be deleted now/);
  });

  it("graph -o mermaid, as the compute provider: its rule as edges from VirtualMachine to VPC and Subnet", async () => {
    // A tenant may not list root, so the default walk finds no rule: it names its workspaces with --rule-workspace.
    const walked = await as(PATHS.compute, "graph", "-o", "json");
    assert.equal(walked.code, 0, walked.stderr);
    assert.match(walked.stderr, /note: you may not list the workspaces in root/);
    assert.match(walked.stderr, /note: no DependencyRules readable/);

    const r = await as(PATHS.compute, "graph", "-o", "mermaid", "--rule-workspace", PATHS.compute);
    assert.equal(r.code, 0, r.stderr);
    const labels = new Map([...r.stdout.matchAll(/^\s+(n\d+)\["([^<"]+)/gm)].map((m) => [m[1], m[2]]));
    const edges = [...r.stdout.matchAll(/^\s+(n\d+) -->\|"([^"]+)"\| (n\d+)$/gm)].map(
      (m) => `${labels.get(m[1])} -[${m[2]}]-> ${labels.get(m[3])}`,
    );
    assert.deepEqual(edges.sort(), [
      "VirtualMachine -[.spec.subnetRef.name]-> subnets",
      "VirtualMachine -[.spec.vpcRef.name]-> vpcs",
    ]);
    assert.match(r.stdout, /root:compute-provider/);
    assert.match(r.stdout, /root:network-provider/);

    const dot = await as(PATHS.compute, "graph", "-o", "dot", "--rule-workspace", PATHS.compute);
    assert.equal(dot.code, 0, dot.stderr);
    // docs/images/plugin-graph.png is this output through Graphviz (docs/plugin.md says how it was made).
    if (process.env["PLUGIN_GRAPH_DOT"]) writeFileSync(process.env["PLUGIN_GRAPH_DOT"], dot.stdout);
    assert.match(
      dot.stdout,
      /"root:compute-provider\|virtualmachines.compute.test.io" -> "root:network-provider\|vpcs.network.test.io"/,
    );
  });

  it("check: a planted dangling reference, as a table; graph --objects marks it missing", async () => {
    const ws = (await owner(PATHS.consumer2)).tenant.client;
    await create(ws, vpc("real-vpc"), vm("fine", { vpc: "real-vpc" }), vm("orphan", { vpc: "no-such-vpc" }));
    // consumer2 plants it, but may not read the rules that say it dangles: the operator checks its workspace.
    assertRulesRefused(await as(PATHS.consumer2, "check", "--rule-workspace", PATHS.compute), PATHS.compute);
    const r = await asOperator(PATHS.consumer2, "check");
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /dangling references in root:consumer2/);
    assert.match(
      r.stdout,
      /default\s+VirtualMachine\/orphan\s+\.spec\.vpcRef\.name\s+vpcs\/no-such-vpc\s+root:compute-provider:vm-dependencies/,
    );
    assert.doesNotMatch(r.stdout, /VirtualMachine\/fine/);
    assert.match(r.stdout, /every DependencyRule read is Ready/);

    const g = await asOperator(PATHS.consumer2, "graph", "--objects", "-o", "json");
    assert.equal(g.code, 0, g.stderr);
    const graph = JSON.parse(g.stdout) as { nodes: { label: string; missing?: boolean }[] };
    assert.deepEqual(
      graph.nodes.filter((n) => n.missing).map((n) => n.label),
      ["VPC default/no-such-vpc"],
    );
  });

  it("a user without rights gets 'you may not ...' and exit 2, never a stack trace", async () => {
    const kubeconfig = e2e.kcp.kubeconfigFor(OUTSIDER.token, PATHS.consumer1, "outsider.kubeconfig");
    const plugin = (...args: string[]): Promise<Run> =>
      exec(process.execPath, [PLUGIN, ...args, `--kubeconfig=${kubeconfig}`]);

    const why = await plugin("why", "vpc/big-vpc");
    assert.equal(why.code, 2, why.stdout);
    assert.match(why.stderr, /^error: you may not read the API discovery of root:consumer1/);
    assertNoStackTrace(why);

    const check = await plugin("check", "--rule-workspace", PATHS.compute);
    assert.equal(check.code, 2);
    assert.match(check.stderr, /^error: you may not read dependencyrules in root:compute-provider$/m);
    assertNoStackTrace(check);

    const graph = await plugin("graph");
    assert.equal(graph.code, 0, graph.stderr);
    assert.match(graph.stderr, /note: you may not list the workspaces in root/);
    assert.match(graph.stderr, /note: no DependencyRules readable/);

    const missingType = await as(PATHS.consumer1, "why", "routers/x");
    assert.equal(missingType.code, 2);
    assert.match(missingType.stderr, /doesn't have a resource type "routers" in this workspace/);
    assertNoStackTrace(missingType);
  });

  it("why on a Terminating VM names its finalizer, owner and age; its VPC is refused as ever; the namespace lists both", async () => {
    const plugin = (...args: string[]): Promise<Run> => as(PATHS.consumer2, ...args);
    const ws = (await owner(PATHS.consumer2)).tenant.client;
    const NS = "why-term";
    // api-syncagent's finalizer, held by nobody here: the plugin names its usual owner from the name alone.
    const HOLD = "syncagent.kcp.io/cleanup";
    const vmPath = `${at(VMS, NS)}/held-vm`;
    await create(ws, { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    const held = vm("held-vm", { vpc: "held-vpc" }, NS);
    await create(ws, vpc("held-vpc", NS), { ...held, metadata: { ...held.metadata, finalizers: [HOLD] } });
    await waitForProtection(ws, `${at(VPCS, NS)}/held-vpc`, true);
    try {
      await ws.request("DELETE", vmPath);
      const since = (await ws.get<{ metadata: { deletionTimestamp?: string } }>(vmPath)).metadata.deletionTimestamp;
      assert.ok(since, "the VM is Terminating");

      const text = await plugin("why", "virtualmachine/held-vm", "-n", NS);
      assert.equal(text.code, 1, text.stdout + text.stderr);
      assert.match(
        text.stdout,
        new RegExp(
          `^virtualmachines/held-vm \\(root:consumer2, namespace ${NS}\\): being deleted since ${since} \\((\\d+[dhms])+ ago\\)`,
        ),
      );
      assert.match(text.stdout, /syncagent\.kcp\.io\/cleanup\s+api-syncagent\s+removed once/);
      const json = await plugin("why", "virtualmachine/held-vm", "-n", NS, "-o", "json");
      assert.equal(json.code, 1, json.stderr);
      const doc = JSON.parse(json.stdout) as WhyDocument;
      assert.equal(doc.verdict, "terminating");
      assert.equal(doc.terminating!.since, since);
      assert.ok(doc.terminating!.ageSeconds! >= 0);
      assert.deepEqual(
        doc.terminating!.finalizers.map((f) => [f.name, f.owner]),
        [[HOLD, "api-syncagent"]],
      );

      // The VPC: still referenced by the Terminating VM, refused and explained as before.
      const refused = await plugin("why", "vpc/held-vpc", "-n", NS);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.match(refused.stdout, /a delete would be REFUSED now/);
      assert.match(refused.stdout, /still referenced by 1 object \(from the webhook's status\.details\.causes\)/);
      assert.match(refused.stdout, new RegExp(`VirtualMachine\\s+${NS}\\s+held-vm\\s+\\.spec\\.vpcRef\\.name`));
      assert.doesNotMatch(refused.stdout, /being deleted/);

      // The namespace around them, once kcp's namespace controller has said what remains.
      await ws.request("DELETE", `/api/v1/namespaces/${NS}`);
      await waitFor(
        "the namespace's deletion conditions",
        async () => {
          const ns = await ws.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
            `/api/v1/namespaces/${NS}`,
          );
          return (
            ns.status?.conditions?.some(
              (c) => /^Namespace(Content|Finalizers)Remaining$/.test(c.type) && c.status === "True",
            ) || undefined
          );
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      const nsWhy = await plugin("why", `namespace/${NS}`);
      assert.equal(nsWhy.code, 1, nsWhy.stdout + nsWhy.stderr);
      assert.match(nsWhy.stdout, new RegExp(`^namespaces/${NS} \\(root:consumer2\\): being deleted since `));
      assert.match(nsWhy.stdout, /Namespace(Content|Finalizers)Remaining\s+True/);
      assert.match(
        nsWhy.stdout,
        /virtualmachines\.compute\.test\.io\s+1\s+held-vm \(deleting; syncagent\.kcp\.io\/cleanup\)/,
      );
      assert.match(nsWhy.stdout, /vpcs\.network\.test\.io\s+1\s+held-vpc/);
      if (process.env["PLUGIN_WHY_TERM_OUT"])
        writeFileSync(
          process.env["PLUGIN_WHY_TERM_OUT"],
          [text.stdout, refused.stdout, nsWhy.stdout, nsWhy.stderr].join("\n----\n"),
        );
    } finally {
      // Let the VM go: its finalizer cleared, as its owner would.
      await ws.request("PATCH", vmPath, {
        body: { metadata: { finalizers: null } },
        contentType: "application/merge-patch+json",
      });
      await waitFor("the held VM to be gone", async () => (await ws.getOptional(vmPath)) === undefined || undefined, {
        timeoutMs: 60_000,
        intervalMs: 300,
      });
    }
  });
});
