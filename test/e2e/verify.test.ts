// kubectl dependencies verify on real kcp, run as the plugin process with the admin's kubeconfig: it passes on the
// healthy topology, and once the network provider's webhook configuration is removed by hand (the controller
// stopped, so it does not put it back) it fails with exit 1, naming the VPC a VM still references.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { PATHS } from "../../tools/kcp/topology.ts";
import { VPCS, VWC_PATH, at, create, e2eSuite, vm, vpc, waitForProtection, waitForVwc } from "./helpers.ts";

const e2e = e2eSuite();
const PLUGIN = path.join(REPO_ROOT, "src/cmd/kubectl-dependencies.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plugin as the admin in root:consumer1, without blocking the event loop (kcp's log pipe keeps draining). */
function verify(...args: string[]): Promise<Run> {
  const argv = [
    PLUGIN,
    "verify",
    ...args,
    `--kubeconfig=${e2e.kcp.adminKubeconfig}`,
    "--context=base",
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
    const ws = e2e.kcp.ws(PATHS.consumer1);
    await create(ws, vpc("used-vpc"), vpc("free-vpc"), vm("user-vm", { vpc: "used-vpc" }));
    await waitForProtection(ws, `${at(VPCS)}/used-vpc`, true);

    const healthy = await verify("-o", "json");
    assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
    const ok = JSON.parse(healthy.stdout) as Report;
    assert.equal(ok.passed, true);
    assert.ok(ok.checked >= 2 && ok.referenced >= 1, healthy.stdout);
    const text = await verify();
    assert.equal(text.code, 0, text.stdout + text.stderr);
    assert.match(text.stdout, /no mismatches/);

    // Protection removed by hand: the controller would reinstall the configuration, so it is stopped first.
    await e2e.bins.controller?.proc.stop();
    await e2e.kcp.ws(PATHS.network).request("DELETE", VWC_PATH);
    await waitForVwc(e2e.kcp, false);
    await waitForProtection(ws, `${at(VPCS)}/used-vpc`, false);

    const broken = await verify("-o", "json");
    assert.equal(broken.code, 1, broken.stdout + broken.stderr);
    const bad = JSON.parse(broken.stdout) as Report;
    assert.equal(bad.passed, false);
    const named = bad.mismatches.map((m) => `${m.kind} ${m.object.resource}/${m.object.namespace}/${m.object.name}`);
    assert.ok(named.includes("unprotected vpcs/default/used-vpc"), named.join("\n"));
    assert.ok(!named.some((n) => n.includes("free-vpc")), "an unreferenced VPC is no mismatch");
    const brokenText = await verify();
    assert.equal(brokenText.code, 1);
    assert.match(
      brokenText.stdout,
      /default\s+vpcs\.network\.test\.io\/used-vpc\s+unprotected\s+a delete would be ALLOWED/,
    );

    await e2e.bins.startController();
    await waitForVwc(e2e.kcp, true);
  });
});
