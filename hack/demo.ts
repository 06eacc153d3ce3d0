// The local demo (README's first command): a kcp on loopback, a network and a compute provider, two consumers, the
// controller and the webhook as separate processes, and a walkthrough of a VPC delete blocked, then allowed.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { VWC_NAME } from "../src/api/types.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../src/api/wire.ts";
import { ApiError, type RestClient } from "../src/kcp/rest.ts";
import { apply } from "../tools/kcp/api.ts";
import { REPO_ROOT, startKcp, type Kcp } from "../tools/kcp/harness.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { Binaries, PATHS, TOKENS, setupTopology, vmRule, type Topology } from "../tools/kcp/topology.ts";
import * as kubectl from "./demo-kubectl.ts";
import { RESOURCES } from "./demo-kubectl.ts";

const USAGE = `Usage: bash hack/demo.sh [--exit] [--help]

Starts kcp v0.30.0 on loopback, sets up providers and consumers, runs the dependency controller and webhook, and
shows a VPC delete being blocked while a VM references it, then allowed once the VM is gone.

  --exit   exit (and clean up) after the walkthrough instead of waiting for Ctrl-C
  --help   show this text`;

const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (n: number, s: string): void => console.log(`\n${bold(`[${n}] ${s}`)}`);
const info = (s: string): void => console.log(`    ${s}`);

/** A kubeconfig with one context per demo workspace, all as kcp-admin, so the printed kubectl commands just work. */
function writeDemoKubeconfig(kcp: Kcp): string {
  const admin = parse(readFileSync(kcp.adminKubeconfig, "utf8")) as {
    clusters: { name: string; cluster: Record<string, unknown> }[];
    users: { name: string; user: Record<string, unknown> }[];
  };
  const base = admin.clusters.find((c) => c.name === "base")?.cluster ?? {};
  const user = admin.users.find((u) => u.name === "kcp-admin")?.user ?? {};
  const names = ["root", ...Object.values(PATHS)];
  const ctx = (p: string): string => p.replace(/^root:/, "");
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: names.map((p) => ({ name: p, cluster: { ...base, server: `${kcp.baseUrl}/clusters/${p}` } })),
    users: [{ name: "kcp-admin", user }],
    contexts: names.map((p) => ({ name: ctx(p), context: { cluster: p, user: "kcp-admin" } })),
    "current-context": "consumer1",
  };
  const file = path.join(kcp.rootDir, "demo.kubeconfig");
  writeFileSync(file, stringify(config), { mode: 0o600 });
  return file;
}

/** Steps 2 and 3: the product's topology as the getting-started guide sets it up, and both binaries running. */
async function setUp(kcp: Kcp, bins: Binaries): Promise<Topology> {
  step(2, "Setting up workspaces, APIs and bootstrap RBAC from deploy/");
  const topo = await setupTopology(kcp, { log: info });

  step(3, "Starting the webhook and the controller, each with its own identity");
  await bins.startWebhook();
  info(`webhook:    ${bins.webhookUrl}  (log: ${bins.webhook?.proc.logFile})`);
  await bins.startController();
  info(`controller: ready             (log: ${bins.controller?.proc.logFile})`);
  return topo;
}

/** Steps 4 to 7: a rule, a VPC and the VM that names it, the refused delete, and the allowed one. */
async function walkthrough(kcp: Kcp, topo: Topology): Promise<void> {
  step(4, "The compute provider declares: VirtualMachines depend on the VPC and subnet they name");
  info("(each step shows the kubectl command a user would type; the demo sends it through its own kcp client)");
  const rule = vmRule(topo.vars);
  await apply(kcp.ws(PATHS.compute), rule);
  // The controller writes the rule's status a moment after the apply: wait for it as a user would, so the table
  // shows the rule Ready with its dependencies counted rather than blank cells.
  const name = rule[0]?.metadata.name ?? "";
  await kubectl.wait(kcp.ws(PATHS.compute), "compute-provider", RESOURCES.dependencyrule, name, "Ready");
  await kubectl.get(kcp.ws(PATHS.compute), "compute-provider", [RESOURCES.dependencyrule]);
  await waitFor(
    "the webhook configuration in the network provider",
    async () =>
      (await kcp.ws(PATHS.network).getOptional(`${WEBHOOK_CONFIGURATIONS_PATH}/${VWC_NAME}`)) !== undefined ||
      undefined,
    { timeoutMs: 60_000 },
  );
  info(`the controller installed ValidatingWebhookConfiguration "${VWC_NAME}" in root:network-provider`);

  step(5, "In consumer1, a VPC and a VM that references it");
  const consumer = kcp.ws(PATHS.consumer1);
  await apply(consumer, [
    { apiVersion: "network.test.io/v1", kind: "VPC", metadata: { name: "my-vpc" }, spec: { cidr: "10.0.0.0/16" } },
    {
      apiVersion: "compute.test.io/v1",
      kind: "VirtualMachine",
      metadata: { name: "my-vm" },
      spec: { cpu: 2, vpcRef: { name: "my-vpc" } },
    },
  ]);
  await kubectl.get(consumer, "consumer1", [RESOURCES.vpc, RESOURCES.virtualmachine]);
  await protectionActive(consumer);

  step(6, "Deleting the VPC while the VM still uses it is refused");
  if (await kubectl.del(consumer, "consumer1", RESOURCES.vpc, "my-vpc")) {
    throw new Error("the VPC delete was allowed, but the VM still references it");
  }

  step(7, "Delete the VM, then the VPC");
  await kubectl.del(consumer, "consumer1", RESOURCES.virtualmachine, "my-vm");
  if (!(await kubectl.del(consumer, "consumer1", RESOURCES.vpc, "my-vpc"))) {
    throw new Error("the VPC delete was refused after its VM was deleted");
  }
}

/** Protection is active once a server-side dry run of the delete is refused (dry runs change nothing). */
async function protectionActive(consumer: RestClient): Promise<void> {
  await waitFor(
    "protection to become active",
    async () => {
      try {
        await consumer.request("DELETE", "/apis/network.test.io/v1/namespaces/default/vpcs/my-vpc", {
          query: { dryRun: "All" },
        });
        return undefined;
      } catch (err) {
        return (err instanceof ApiError && err.status === 409) || undefined;
      }
    },
    { timeoutMs: 60_000 },
  );
}

/** What to try next by hand, with kubectl and the plugin, while everything keeps running. */
function printHints(kubeconfig: string, bins: Binaries): void {
  // Flush left, so the block (heredoc included) can be pasted into a shell as it is.
  console.log(`
Everything is still running. Try more with kubectl:

export KUBECONFIG=${kubeconfig}
kubectl config get-contexts          # dep-ctrl, network-provider, compute-provider, consumer1, consumer2
kubectl --context=compute-provider get dependencyrules
kubectl --context=network-provider get validatingwebhookconfigurations ${VWC_NAME} -o yaml
kubectl --context=consumer2 create -f - <<'EOF'
apiVersion: network.test.io/v1
kind: VPC
metadata: {name: other-vpc}
---
apiVersion: compute.test.io/v1
kind: VirtualMachine
metadata: {name: other-vm}
spec: {vpcRef: {name: other-vpc}}
EOF
kubectl --context=consumer2 delete vpc other-vpc     # refused: other-vm uses it
${path.join(REPO_ROOT, ".bin/kubectl-dependencies")} why vpc/other-vpc --context=consumer2   # exit 1: other-vm, at .spec.vpcRef.name
${path.join(REPO_ROOT, ".bin/kubectl-dependencies")} teardown -n default --plan --context=consumer2   # wave 1: other-vm, wave 2: other-vpc (drop --plan to delete in that order)
kubectl --context=consumer2 annotate vpc other-vpc dependencies.opendefense.cloud/skip-protection=true
kubectl --context=consumer2 delete vpc other-vpc     # allowed: break-glass annotation

Logs: ${bins.controller?.proc.logFile}
      ${bins.webhook?.proc.logFile}
Press Ctrl-C to stop and clean up.`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { exit: { type: "boolean", default: false }, help: { type: "boolean", default: false } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }

  step(1, "Starting kcp v0.30.0 on loopback (about 25 s)");
  const kcp = await startKcp({ tokens: TOKENS });
  const bins = new Binaries(kcp);
  try {
    info(`kcp is ready at ${kcp.baseUrl} (root directory ${kcp.rootDir})`);
    const topo = await setUp(kcp, bins);
    const kubeconfig = writeDemoKubeconfig(kcp);
    await walkthrough(kcp, topo);
    console.log(
      `\n${bold("Done: the delete was blocked while the VM referenced the VPC, and allowed once it was gone.")}`,
    );
    if (values.exit) return;
    printHints(kubeconfig, bins);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
  } finally {
    console.log("\nStopping the controller, the webhook and kcp, and removing the demo directory...");
    await bins.stop();
    await kcp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
