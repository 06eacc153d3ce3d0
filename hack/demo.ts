// The local demo (README's first command): a kcp on loopback, a network and a compute provider, two consumers, the
// controller and the webhook as separate processes, and a walkthrough of a VPC delete blocked, then allowed.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { parse, stringify } from "yaml";
import { VWC_NAME } from "../src/api/types.ts";
import { ApiError } from "../src/kcp/rest.ts";
import { apply } from "../tools/kcp/api.ts";
import { REPO_ROOT, startKcp, type Kcp } from "../tools/kcp/harness.ts";
import { waitFor } from "../tools/kcp/process.ts";
import { Binaries, PATHS, TOKENS, setupTopology, vmRule } from "../tools/kcp/topology.ts";

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

function hasKubectl(): boolean {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Runs kubectl as a user would and shows its output; returns whether it succeeded. */
function kubectl(kubeconfig: string, args: string[]): boolean {
  console.log(`    $ kubectl ${args.join(" ")}`);
  try {
    const out = execFileSync("kubectl", [`--kubeconfig=${kubeconfig}`, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    for (const line of out.trimEnd().split("\n")) info(line);
    return true;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string };
    for (const line of `${e.stdout ?? ""}${e.stderr ?? ""}`.trimEnd().split("\n")) info(line);
    return false;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { exit: { type: "boolean", default: false }, help: { type: "boolean", default: false } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!hasKubectl()) {
    console.error(
      "demo: kubectl is needed to show the walkthrough as a user sees it (install it, e.g. apt-get install kubectl)",
    );
    process.exit(1);
  }

  step(1, "Starting kcp v0.30.0 on loopback (about 25 s)");
  const kcp = await startKcp({ tokens: TOKENS });
  const bins = new Binaries(kcp);
  let stopping = false;
  const cleanup = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log("\nStopping the controller, the webhook and kcp, and removing the demo directory...");
    await bins.stop();
    await kcp.stop();
  };
  try {
    info(`kcp is ready at ${kcp.baseUrl} (root directory ${kcp.rootDir})`);

    step(2, "Setting up workspaces, APIs and bootstrap RBAC from deploy/");
    const topo = await setupTopology(kcp, { log: info });
    const kubeconfig = writeDemoKubeconfig(kcp);

    step(3, "Starting the webhook and the controller, each with its own identity");
    await bins.startWebhook();
    info(`webhook:    ${bins.webhookUrl}  (log: ${bins.webhook?.proc.logFile})`);
    await bins.startController();
    info(`controller: ready             (log: ${bins.controller?.proc.logFile})`);

    step(4, "The compute provider declares: VirtualMachines depend on the VPC and subnet they name");
    await apply(kcp.ws(PATHS.compute), vmRule(topo.vars));
    kubectl(kubeconfig, ["--context=compute-provider", "get", "dependencyrules"]);
    await waitFor(
      "the webhook configuration in the network provider",
      async () =>
        (await kcp
          .ws(PATHS.network)
          .getOptional(`/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${VWC_NAME}`)) !==
          undefined || undefined,
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
    kubectl(kubeconfig, ["--context=consumer1", "get", "vpcs,virtualmachines"]);
    // Protection is active once a server-side dry run of the delete is refused (dry runs change nothing).
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

    step(6, "Deleting the VPC while the VM still uses it is refused");
    if (kubectl(kubeconfig, ["--context=consumer1", "delete", "vpc", "my-vpc"])) {
      throw new Error("the VPC delete was allowed, but the VM still references it");
    }

    step(7, "Delete the VM, then the VPC");
    kubectl(kubeconfig, ["--context=consumer1", "delete", "virtualmachine", "my-vm"]);
    if (!kubectl(kubeconfig, ["--context=consumer1", "delete", "vpc", "my-vpc"])) {
      throw new Error("the VPC delete was refused after its VM was deleted");
    }

    console.log(
      `\n${bold("Done: the delete was blocked while the VM referenced the VPC, and allowed once it was gone.")}`,
    );
    if (values.exit) return;

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
kubectl --context=consumer2 annotate vpc other-vpc dependencies.opendefense.cloud/skip-protection=true
kubectl --context=consumer2 delete vpc other-vpc     # allowed: break-glass annotation

Logs: ${bins.controller?.proc.logFile}
      ${bins.webhook?.proc.logFile}
Press Ctrl-C to stop and clean up.`);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
