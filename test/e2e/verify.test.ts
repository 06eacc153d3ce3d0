// kubectl dependencies verify on real kcp, run as the plugin process: it passes on the healthy topology, and once the
// network provider removes its webhook configuration by hand with its own ServiceAccount token (the operator stopped
// the controller, so it does not put it back) it fails with exit 1, naming the VPC a VM still references. consumer1
// creates its objects with its own token, and asking verify with it is refused with a sentence: the token is scoped
// to consumer1 and may not read the compute provider's rules. verify is the operator's periodic job
// (docs/operations.md), with an identity that reads the consumer's objects and the providers' rules: kcp-admin here.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { tenant } from "../../tools/kcp/tenant.ts";
import { PATHS } from "../../tools/kcp/topology.ts";
import { VPCS, VWC_PATH, at, create, e2eSuite, vm, vpc, waitForProtection, waitForVwc } from "./helpers.ts";

const e2e = e2eSuite();
const PLUGIN = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plugin in root:consumer1 with `connection`, without blocking the event loop (kcp's log pipe keeps draining). */
function verify(connection: string[], ...args: string[]): Promise<Run> {
  const argv = [
    PLUGIN,
    "verify",
    ...args,
    ...connection,
    `--workspace=${PATHS.consumer1}`,
    `--rule-workspace=${PATHS.compute}`,
  ];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

interface Report {
  checked: number;
  referenced: number;
  passed: boolean;
  mismatches: { kind: string; object: { resource: string; namespace?: string; name: string } }[];
}

describe("kubectl dependencies verify on real kcp", () => {
  it("passes while protection matches the rules, fails naming the VPC once its webhook configuration is gone", async () => {
    const me = await tenant(e2e.kcp, PATHS.consumer1, { name: "verify-owner" });
    const kubeconfig = e2e.kcp.kubeconfigFor(me.token, PATHS.consumer1, "verify-owner.kubeconfig");
    const network = (await tenant(e2e.kcp, PATHS.network, { name: "verify-owner" })).client;
    const operator = [`--kubeconfig=${e2e.kcp.adminKubeconfig}`, "--context=base"];
    const ws = me.client;
    await create(ws, vpc("used-vpc"), vpc("free-vpc"), vm("user-vm", { vpc: "used-vpc" }));
    await waitForProtection(ws, `${at(VPCS)}/used-vpc`, true);

    // The consumer's own token: refused (kcp answers it 403 outside consumer1), in a sentence, at the provider's rules.
    const asConsumer = await verify([`--kubeconfig=${kubeconfig}`], "-o", "json");
    assert.equal(asConsumer.code, 2, asConsumer.stdout + asConsumer.stderr);
    assert.match(asConsumer.stderr, /^error: you may not read dependencyrules in root:compute-provider$/m);
    assert.doesNotMatch(asConsumer.stderr, /^\s+at /m);

    const healthy = await verify(operator, "-o", "json");
    assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
    const ok = JSON.parse(healthy.stdout) as Report;
    assert.equal(ok.passed, true);
    assert.ok(ok.checked >= 2 && ok.referenced >= 1, healthy.stdout);
    const text = await verify(operator);
    assert.equal(text.code, 0, text.stdout + text.stderr);
    assert.match(text.stdout, /no mismatches/);

    // Protection removed by hand, by the network provider in its own workspace. The controller would reinstall the
    // configuration, so the operator (kcp-admin's side: the controller is its deployment) stops it first.
    await e2e.bins.controller?.proc.stop();
    await network.request("DELETE", VWC_PATH);
    await waitForVwc(e2e.kcp, false);
    await waitForProtection(ws, `${at(VPCS)}/used-vpc`, false);

    const broken = await verify(operator, "-o", "json");
    assert.equal(broken.code, 1, broken.stdout + broken.stderr);
    const bad = JSON.parse(broken.stdout) as Report;
    assert.equal(bad.passed, false);
    const named = bad.mismatches.map((m) => `${m.kind} ${m.object.resource}/${m.object.namespace}/${m.object.name}`);
    assert.ok(named.includes("unprotected vpcs/default/used-vpc"), named.join("\n"));
    assert.ok(!named.some((n) => n.includes("free-vpc")), "an unreferenced VPC is no mismatch");
    const brokenText = await verify(operator);
    assert.equal(brokenText.code, 1);
    assert.match(
      brokenText.stdout,
      /default\s+vpcs\.network\.test\.io\/used-vpc\s+unprotected\s+a delete would be ALLOWED/,
    );

    await e2e.bins.startController();
    await waitForVwc(e2e.kcp, true);
  });
});
