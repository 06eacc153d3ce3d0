// The admission webhook on a real kcp: the product topology (dep-ctrl, a network and a compute provider, two
// consumers), the DependencyRule "VMs depend on their VPC", a ValidatingWebhookConfiguration written by hand in the
// network provider (the controller's job, not tested here), and the webhook binary's run() in-process with its own
// token identity and the bootstrap RBAC from deploy/rbac.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { apply, type KObject } from "../../tools/kcp/api.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";
import { kcpSuite } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { IDENTITIES, PATHS, TOKENS, setupTopology, vmRule, type Topology } from "../../tools/kcp/topology.ts";
import { readFileSync } from "node:fs";
import path from "node:path";
import { isApiError, type ApiError, type RestClient } from "../../src/kcp/rest.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { run } from "../../src/cmd/webhook.ts";
import type { Started } from "../../src/cli/kit.ts";

const env = kcpSuite({ tokens: TOKENS });
const WEBHOOK = `admission webhook "dependency-controller.dependencies.opendefense.cloud" denied the request`;
const vpcs = (ns = "default") => `/apis/network.test.io/v1/namespaces/${ns}/vpcs`;

const vpc = (name: string, ns = "default", annotations: Record<string, string> = {}): KObject => ({
  apiVersion: "network.test.io/v1",
  kind: "VPC",
  metadata: { name, namespace: ns, annotations },
  spec: { cidr: "10.0.0.0/16" },
});
const vm = (name: string, vpcName: string, ns = "default"): KObject => ({
  apiVersion: "compute.test.io/v1",
  kind: "VirtualMachine",
  metadata: { name, namespace: ns },
  spec: { cpu: 1, vpcRef: { name: vpcName } },
});
const namespace = (name: string): KObject => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });

async function del(ws: RestClient, p: string, dryRun = false): Promise<ApiError | undefined> {
  try {
    await ws.request("DELETE", p, dryRun ? { query: { dryRun: "All" } } : {});
    return undefined;
  } catch (err) {
    if (isApiError(err)) return err;
    throw err;
  }
}

async function exists(ws: RestClient, p: string): Promise<boolean> {
  return (await ws.getOptional(p)) !== undefined;
}

describe("dependency webhook on kcp", () => {
  let topo: Topology;
  let running: Started | undefined;
  const stop = new AbortController();
  let done: Promise<number>;
  let consumer1: RestClient;
  let consumer2: RestClient;

  before(async () => {
    const { kcp } = env;
    topo = await setupTopology(kcp);
    consumer1 = kcp.ws(PATHS.consumer1);
    consumer2 = kcp.ws(PATHS.consumer2);
    await apply(kcp.ws(PATHS.compute), vmRule(topo.vars));

    const certs = makeCerts(path.join(kcp.rootDir, "webhook-it-tls"));
    const kubeconfig = kcp.kubeconfigFor(IDENTITIES.webhook.token, PATHS.depCtrl, "webhook-it.kubeconfig");
    let errors = "";
    done = run(
      [
        `--kubeconfig=${kubeconfig}`,
        "--bind-address=127.0.0.1",
        "--webhook-port=0",
        `--tls-cert-file=${certs.cert}`,
        `--tls-key-file=${certs.key}`,
        "--health-probe-bind-address=127.0.0.1:0",
      ],
      {
        env: {},
        stderr: (l) => (errors += l),
        signal: stop.signal,
        logger: createLogger("webhook-it", "warn"),
        onStarted: (r) => (running = r),
      },
    );
    const w = await waitFor("webhook started", () => {
      if (errors) throw new Error(errors);
      return Promise.resolve(running);
    });
    await waitFor(
      "webhook registry has the rule",
      async () => {
        const ready = await fetch(`http://127.0.0.1:${w.ports["health"]}/readyz`);
        const metrics = await (await fetch(`http://127.0.0.1:${w.ports["health"]}/metrics`)).text();
        return (ready.status === 200 && /dependency_webhook_registry_rules 1\b/.test(metrics)) || undefined;
      },
      { timeoutMs: 60_000 },
    );

    // The VWC the controller would write, by hand, in the network provider's workspace.
    await apply(kcp.ws(PATHS.network), [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: "dependency-controller" },
        webhooks: [
          {
            name: "dependency-controller.dependencies.opendefense.cloud",
            admissionReviewVersions: ["v1"],
            sideEffects: "None",
            failurePolicy: "Fail",
            timeoutSeconds: 10,
            clientConfig: {
              url: `https://127.0.0.1:${w.ports["webhook"]}/validate/${topo.clusters.network}`,
              caBundle: Buffer.from(readFileSync(certs.caCert)).toString("base64"),
            },
            rules: [
              {
                operations: ["DELETE"],
                apiGroups: ["network.test.io"],
                apiVersions: ["*"],
                resources: ["vpcs", "subnets"],
              },
            ],
          },
        ],
      },
    ]);

    await apply(consumer1, [namespace("other")]);
    await apply(consumer1, [vpc("vpc-used"), vpc("vpc-free"), vpc("vpc-ns"), vpc("vpc-ns", "other")]);
    await apply(consumer1, [vm("vm-1", "vpc-used"), vm("vm-other-ns", "vpc-ns", "other")]);
    // kcp picks the VWC up asynchronously: wait until a referenced VPC's dry-run delete is denied.
    await waitFor(
      "kcp calls the webhook",
      async () => (await del(consumer1, `${vpcs()}/vpc-used`, true))?.status === 409,
      {
        timeoutMs: 60_000,
        intervalMs: 500,
      },
    );
  });

  after(async () => {
    stop.abort();
    if (running) assert.equal(await done, 0);
  });

  it("denies deleting a referenced VPC with 409 and the original's message", async () => {
    const err = await del(consumer1, `${vpcs()}/vpc-used`);
    assert.equal(err?.status, 409);
    assert.equal(err?.reason, "Conflict");
    assert.match(err?.message ?? "", /: 409 Conflict: /);
    assert.ok(
      err?.message.endsWith(`${WEBHOOK}: cannot delete vpcs/vpc-used: still referenced by VirtualMachine/vm-1`),
      err?.message,
    );
    assert.equal(await exists(consumer1, `${vpcs()}/vpc-used`), true);
  });

  it("dry-run: denied for a referenced VPC, allowed for an unreferenced one, nothing changes", async () => {
    const denied = await del(consumer1, `${vpcs()}/vpc-used`, true);
    assert.equal(denied?.status, 409);
    assert.equal(await del(consumer1, `${vpcs()}/vpc-free`, true), undefined);
    assert.equal(await exists(consumer1, `${vpcs()}/vpc-used`), true);
    assert.equal(await exists(consumer1, `${vpcs()}/vpc-free`), true);
  });

  it("deletes an unreferenced VPC", async () => {
    assert.equal(await del(consumer1, `${vpcs()}/vpc-free`), undefined);
    await waitFor("vpc-free gone", async () => !(await exists(consumer1, `${vpcs()}/vpc-free`)));
  });

  it("a VM in another namespace does not block a namespaced VPC; one in the same namespace does", async () => {
    assert.equal((await del(consumer1, `${vpcs("other")}/vpc-ns`, true))?.status, 409);
    assert.equal(await del(consumer1, `${vpcs()}/vpc-ns`), undefined);
  });

  it("a same-named VPC in another workspace is unaffected", async () => {
    await apply(consumer2, [vpc("vpc-used")]);
    assert.equal(await del(consumer2, `${vpcs()}/vpc-used`), undefined);
    assert.equal(await exists(consumer1, `${vpcs()}/vpc-used`), true);
  });

  it("a raw DELETECOLLECTION deletes exactly the unreferenced VPCs", async () => {
    await apply(consumer1, [vpc("bulk-1"), vpc("bulk-2")]);
    // kcp-admin may not deletecollection a bound resource; shard-admin may (verified on kcp v0.30.0).
    const admin = env.kcp.shardAdmin.forCluster(PATHS.consumer1);
    const err = await del(admin, vpcs());
    assert.equal(err?.status, 409);
    assert.ok(err?.message.includes("cannot delete vpcs/vpc-used: still referenced by VirtualMachine/vm-1"));
    await waitFor("bulk VPCs gone", async () => {
      const list = await consumer1.get<{ items: { metadata: { name: string } }[] }>(vpcs());
      const names = list.items.map((i) => i.metadata.name);
      return names.length === 1 && names[0] === "vpc-used";
    });
  });

  it('skip-protection "false" does not skip; "true" does', async () => {
    const p = `${vpcs()}/vpc-used`;
    await apply(consumer1, [vpc("vpc-used", "default", { "dependencies.opendefense.cloud/skip-protection": "false" })]);
    assert.equal((await del(consumer1, p))?.status, 409);
    await apply(consumer1, [vpc("vpc-used", "default", { "dependencies.opendefense.cloud/skip-protection": "true" })]);
    assert.equal(await del(consumer1, p), undefined);
    await waitFor("vpc-used gone", async () => !(await exists(consumer1, p)));
  });

  it("counted the decisions", async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${running!.ports["health"]}/metrics`)).text();
    assert.match(metrics, /dependency_webhook_decisions_total\{outcome="denied",reason="referenced"\} \d+/);
    assert.match(metrics, /dependency_webhook_decisions_total\{outcome="allowed",reason="skip-protection"\} 1/);
  });
});
