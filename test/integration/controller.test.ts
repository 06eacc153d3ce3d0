// The controller on a real kcp: the product topology (dep-ctrl, network and compute providers, consumers) with the
// generated manifests and bootstrap RBAC, the controller's run() in-process under its own token identity, and
// DependencyRules applied by a provider admin. Checks the webhook configurations it writes, the rule status, the
// printer columns, and the schema's validation as kcp enforces it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { apply, createWorkspace, type KObject, waitForBinding } from "../../tools/kcp/api.ts";
import { rule, type RuleWithStatus } from "./controller-fixtures.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";
import { kcpSuite, REPO_ROOT } from "../../tools/kcp/harness.ts";
import { freePort, waitFor } from "../../tools/kcp/process.ts";
import {
  depCtrlBinding,
  EXPORT_NAME,
  IDENTITIES,
  PATHS,
  setupTopology,
  TOKENS,
  type Topology,
} from "../../tools/kcp/topology.ts";
import { run } from "../../src/cmd/controller.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../src/api/types.ts";
import type { ValidatingWebhookConfiguration } from "../../src/controller/desired.ts";
import { DEPENDENCY_RULES_PATH as RULES_PATH, WEBHOOK_CONFIGURATIONS_PATH as VWC_PATH } from "../../src/api/wire.ts";
import { isApiError, type RestClient } from "../../src/kcp/rest.ts";
import { createLogger, silentLogger } from "../../src/observability/logger.ts";
import { loadKcpConnection } from "../../src/kcp/kubeconfig.ts";
import { ShardList } from "../../src/kcp/shards.ts";
import { shardsToVisit } from "../../src/controller/local-targets-shards.ts";
import { ENDPOINT_SLICES_PATH, endpointUrls, type APIExportEndpointSlice } from "../../src/kcp/virtualworkspace.ts";

const env = kcpSuite({ tokens: TOKENS });
const NESTED = "root:org:network";

describe("dependency controller on kcp", () => {
  let topo: Topology;
  let compute: RestClient;
  let network: RestClient;
  let nestedCluster = "";
  const ca1 = (): string => readFileSync(path.join(env.kcp.rootDir, "ca-a/ca.crt"), "utf8");
  const ca2 = (): string => readFileSync(path.join(env.kcp.rootDir, "ca-b/ca.crt"), "utf8");
  const caFile = (): string => path.join(env.kcp.rootDir, "controller-ca.pem");
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  interface Running {
    stop: () => Promise<number>;
    errors: () => string;
    metricsUrl: string;
  }
  let controller: Running | undefined;

  async function startController(webhookUrl: string): Promise<Running> {
    const ac = new AbortController();
    let errors = "";
    const kubeconfig = env.kcp.kubeconfigFor(IDENTITIES.controller.token, PATHS.depCtrl, "controller-it.kubeconfig");
    const health = await freePort();
    const done = run(
      [
        `--kubeconfig=${kubeconfig}`,
        `--webhook-url=${webhookUrl}`,
        `--webhook-ca-bundle-file=${caFile()}`,
        `--health-probe-bind-address=127.0.0.1:${health}`,
        "--resync-period=2s",
      ],
      { env: {}, signal: ac.signal, stderr: (s) => (errors += s), logger: createLogger("controller-it", "warn") },
    );
    void done.then((code) => {
      if (code !== 0 && !ac.signal.aborted) errors += `controller exited with ${code}`;
    });
    controller = {
      stop: async () => {
        ac.abort();
        return done;
      },
      errors: () => errors,
      metricsUrl: `http://127.0.0.1:${health}/metrics`,
    };
    return controller;
  }

  async function vwc(ws: string): Promise<ValidatingWebhookConfiguration | undefined> {
    return env.kcp.ws(ws).getOptional<ValidatingWebhookConfiguration>(`${VWC_PATH}/dependency-controller`);
  }

  const resources = (c: ValidatingWebhookConfiguration | undefined): string[] =>
    (c?.webhooks?.[0]?.rules ?? []).map((r) => `${r.resources.join()}.${r.apiGroups.join()}/${r.apiVersions.join()}`);

  /** Waits until the provider's configuration protects exactly `want` (undefined: no configuration at all). */
  async function waitForProtection(
    ws: string,
    want: string[] | undefined,
  ): Promise<ValidatingWebhookConfiguration | undefined> {
    let last: ValidatingWebhookConfiguration | undefined;
    try {
      await waitFor(
        `${ws} protects ${want ? want.join(",") : "nothing"}`,
        async () => {
          if (controller?.errors()) throw new Error(controller.errors());
          last = await vwc(ws);
          if (want === undefined) return last === undefined || undefined;
          return (last && JSON.stringify(resources(last)) === JSON.stringify(want)) || undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(resources(last))}`);
    }
    return last;
  }

  async function conditions(ws: RestClient, name: string): Promise<Record<string, [string, string, string]>> {
    const r = await ws.get<RuleWithStatus>(`${RULES_PATH}/${name}`);
    return Object.fromEntries((r.status?.conditions ?? []).map((c) => [c.type, [c.status, c.reason, c.message]]));
  }

  async function waitForCondition(
    ws: RestClient,
    name: string,
    type: string,
    status: string,
  ): Promise<[string, string, string]> {
    return waitFor(`${name} ${type}=${status}`, async () => {
      const c = (await conditions(ws, name))[type];
      return c?.[0] === status ? c : undefined;
    });
  }

  async function remove(ws: RestClient, name: string): Promise<void> {
    await ws.request("DELETE", `${RULES_PATH}/${name}`).catch((err: unknown) => {
      if (!isApiError(err, 404)) throw err;
    });
  }

  before(async () => {
    const { kcp } = env;
    topo = await setupTopology(kcp);
    compute = kcp.ws(PATHS.compute);
    network = kcp.ws(PATHS.network);
    // A provider below an organization: its path must be resolved through root:org.
    nestedCluster = await createWorkspace(kcp.admin, NESTED);
    const vars = { CONTROLLER_USER: IDENTITIES.controller.user, WEBHOOK_USER: IDENTITIES.webhook.user };
    await apply(
      kcp.ws("root:org"),
      readFileSync(path.join(REPO_ROOT, "deploy/rbac/workspace-resolution.yaml"), "utf8"),
      vars,
    );
    await apply(kcp.ws(NESTED), readFileSync(path.join(REPO_ROOT, "test/fixtures/network-provider.yaml"), "utf8"));
    await apply(kcp.ws(NESTED), depCtrlBinding(PATHS.depCtrl));
    await waitForBinding(kcp.ws(NESTED), "dependencies.opendefense.cloud");
    makeCerts(path.join(kcp.rootDir, "ca-a"));
    makeCerts(path.join(kcp.rootDir, "ca-b"));
    copyFileSync(path.join(kcp.rootDir, "ca-a/ca.crt"), caFile());
    await startController("https://127.0.0.1:9443");
  });

  after(async () => {
    if (controller) assert.equal(await controller.stop(), 0);
  });

  it("a rule protecting vpcs of root:network-provider installs exactly one configuration there", async () => {
    await apply(compute, [rule("vm-vpcs", [{ resource: "vpcs" }])]);
    const c = await waitForProtection(PATHS.network, ["vpcs.network.test.io/v1"]);
    const all = await network.get<{ items: ValidatingWebhookConfiguration[] }>(VWC_PATH);
    assert.deepEqual(
      all.items.map((i) => [i.metadata.name, i.metadata.labels?.[MANAGED_BY_LABEL]]),
      [["dependency-controller", MANAGED_BY_VALUE]],
    );
    const webhook = c?.webhooks?.[0];
    assert.equal(webhook?.name, "dependency-controller.dependencies.opendefense.cloud");
    assert.equal(webhook?.clientConfig.url, `https://127.0.0.1:9443/validate/${topo.clusters.network}`);
    assert.equal(webhook?.clientConfig.caBundle, b64(ca1()));
    assert.deepEqual(
      [
        webhook?.failurePolicy,
        webhook?.sideEffects,
        webhook?.timeoutSeconds,
        webhook?.matchPolicy,
        webhook?.rules?.[0]?.operations,
      ],
      ["Fail", "None", 10, "Equivalent", ["DELETE"]],
    );
    assert.equal(await vwc(PATHS.compute), undefined, "nothing in the dependent's own workspace");
    await waitForCondition(compute, "vm-vpcs", "Ready", "True");
  });

  it("a second rule protecting subnets merges into the same configuration", async () => {
    await apply(compute, [rule("vm-subnets", [{ resource: "subnets" }])]);
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1", "vpcs.network.test.io/v1"]);
  });

  it("kubectl get dependencyrules prints Dependent, Enforcement, Dependencies, Ready and Age", async () => {
    await waitForCondition(compute, "vm-subnets", "Ready", "True");
    const out = execFileSync(
      "/usr/bin/kubectl",
      [
        `--kubeconfig=${env.kcp.adminKubeconfig}`,
        "--context=base",
        `--server=${env.kcp.baseUrl}/clusters/${PATHS.compute}`,
        "get",
        "dependencyrules",
      ],
      { encoding: "utf8" },
    );
    const lines = out
      .trim()
      .split("\n")
      .map((l) => l.trim().split(/\s+/));
    assert.deepEqual(lines[0], ["NAME", "DEPENDENT", "ENFORCEMENT", "DEPENDENCIES", "READY", "AGE"]);
    // kcp fills in the schema's default: rules written without enforcement (the original's) read Deny.
    assert.deepEqual(lines.find((l) => l[0] === "vm-vpcs")?.slice(0, 5), [
      "vm-vpcs",
      "VirtualMachine",
      "Deny",
      "1",
      "True",
    ]);
  });

  it("deleting one rule leaves the other's entry", async () => {
    await remove(compute, "vm-vpcs");
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1"]);
  });

  it("editing a rule to drop a dependency prunes it", async () => {
    await apply(compute, [rule("vm-subnets", [{ resource: "subnets" }, { resource: "vpcs" }])]);
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1", "vpcs.network.test.io/v1"]);
    await apply(compute, [rule("vm-subnets", [{ resource: "subnets" }])]);
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1"]);
    const r = await compute.get<RuleWithStatus>(`${RULES_PATH}/vm-subnets`);
    await waitFor("observedGeneration follows", async () => {
      const now = await compute.get<RuleWithStatus>(`${RULES_PATH}/vm-subnets`);
      return now.status?.observedGeneration === r.metadata.generation || undefined;
    });
  });

  it("a provider at the nested path root:org:network gets its own configuration", async () => {
    await apply(compute, [rule("vm-nested", [{ resource: "vpcs", path: NESTED }])]);
    const c = await waitForProtection(NESTED, ["vpcs.network.test.io/v1"]);
    assert.equal(c?.webhooks?.[0]?.clientConfig.url, `https://127.0.0.1:9443/validate/${nestedCluster}`);
  });

  it("a rotated CA file reaches existing configurations without a restart", async () => {
    copyFileSync(path.join(env.kcp.rootDir, "ca-b/ca.crt"), caFile());
    await waitFor("new caBundle everywhere", async () => {
      const [a, b] = await Promise.all([vwc(PATHS.network), vwc(NESTED)]);
      const want = b64(ca2());
      return (
        (a?.webhooks?.[0]?.clientConfig.caBundle === want && b?.webhooks?.[0]?.clientConfig.caBundle === want) ||
        undefined
      );
    });
  });

  it("a changed webhook URL reaches existing configurations", async () => {
    assert.equal(await controller!.stop(), 0);
    await startController("https://webhook.example:8443/base");
    await waitFor("new URL", async () => {
      const c = await vwc(PATHS.network);
      return (
        c?.webhooks?.[0]?.clientConfig.url === `https://webhook.example:8443/base/validate/${topo.clusters.network}` ||
        undefined
      );
    });
  });

  it("status names an unresolvable path, and a cycle between two providers' rules", async () => {
    await apply(compute, [rule("vm-lost", [{ resource: "vpcs", path: "root:does-not-exist" }])]);
    const resolved = await waitForCondition(compute, "vm-lost", "WorkspacesResolved", "False");
    assert.deepEqual(resolved.slice(0, 2), ["False", "ResolutionFailed"]);
    assert.match(
      resolved[2],
      /^root:does-not-exist: workspace root:does-not-exist not found or not readable by dep-ctrl;/,
    );
    assert.equal((await conditions(compute, "vm-lost"))["Ready"]?.[1], "ResolutionFailed");

    await apply(network, [
      rule(
        "vpc-needs-vm",
        [{ resource: "virtualmachines", group: "compute.test.io", path: PATHS.compute, field: ".spec.vmRef.name" }],
        {
          group: "network.test.io",
          kind: "VPC",
          resource: "vpcs",
        },
      ),
    ]);
    const cycle = await waitForCondition(network, "vpc-needs-vm", "Acyclic", "False");
    assert.equal(cycle[1], "CycleDetected");
    // vm-lost and vm-nested (compute) draw the same virtualmachines → vpcs edge (cycles are about resource types,
    // resolved or not); the network provider's author reads them counted, not named (they are another tenant's).
    assert.ok(
      cycle[2].startsWith(
        "dependency cycle virtualmachines.compute.test.io → vpcs.network.test.io → virtualmachines.compute.test.io " +
          "(rule vpc-needs-vm of this workspace and 2 rules in other workspaces)",
      ),
      cycle[2],
    );
    assert.equal((await waitForCondition(compute, "vm-nested", "Acyclic", "False"))[1], "CycleDetected");
    await remove(network, "vpc-needs-vm");
    await remove(compute, "vm-lost");
    await waitForCondition(compute, "vm-nested", "Acyclic", "True");
    await waitForProtection(PATHS.compute, undefined);
  });

  it("never touches a configuration without its label", async () => {
    await apply(network, [
      {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: "someone-else" },
        webhooks: [
          {
            name: "someone-else.example.com",
            admissionReviewVersions: ["v1"],
            sideEffects: "None",
            failurePolicy: "Ignore",
            clientConfig: { url: "https://127.0.0.1:1/x" },
            rules: [
              { operations: ["DELETE"], apiGroups: ["example.com"], apiVersions: ["v1"], resources: ["nothings"] },
            ],
          },
        ],
      },
    ]);
    const before = await network.get<ValidatingWebhookConfiguration>(`${VWC_PATH}/someone-else`);
    await new Promise((r) => setTimeout(r, 5_000)); // two resync periods
    const later = await network.get<ValidatingWebhookConfiguration>(`${VWC_PATH}/someone-else`);
    assert.equal(later.metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it("removes configurations orphaned while it was stopped after the next start", async () => {
    assert.equal(await controller!.stop(), 0);
    await remove(compute, "vm-subnets");
    await remove(compute, "vm-nested");
    await new Promise((r) => setTimeout(r, 2_000));
    assert.ok(await vwc(PATHS.network), "nobody removes it while the controller is down");
    await startController("https://127.0.0.1:9443");
    await waitForProtection(PATHS.network, undefined);
    await waitForProtection(NESTED, undefined);
    assert.ok(await network.getOptional(`${VWC_PATH}/someone-else`), "the foreign configuration is still there");
  });

  it("a standby replica waits for the lease and takes over at once when the leader stops", async () => {
    interface Lease {
      spec?: { holderIdentity?: string };
    }
    const leasePath = "/apis/coordination.k8s.io/v1/namespaces/default/leases/kcp-dependency-controller";
    const depCtrl = env.kcp.ws(PATHS.depCtrl);
    const leader = controller!;
    const holder = (await depCtrl.get<Lease>(leasePath)).spec?.holderIdentity;
    assert.ok(holder, "the running controller holds the lease");
    const standby = await startController("https://127.0.0.1:9443");
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal((await depCtrl.get<Lease>(leasePath)).spec?.holderIdentity, holder, "the standby did not take over");

    assert.equal(await leader.stop(), 0);
    // Released on the way out, not left to expire: right after stop() the old holder is gone from the Lease.
    assert.notEqual((await depCtrl.get<Lease>(leasePath)).spec?.holderIdentity, holder, "the lease was released");
    await waitFor("standby holds the lease", async () => {
      const h = (await depCtrl.get<Lease>(leasePath)).spec?.holderIdentity;
      return (h && h !== holder) || undefined;
    });
    await apply(compute, [rule("vm-after-failover", [{ resource: "subnets" }])]);
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1"]);
    await remove(compute, "vm-after-failover");
    await waitForProtection(PATHS.network, undefined);
    assert.equal(controller, standby);
  });

  /** The sum of a counter's samples on the running controller's /metrics. */
  async function counter(name: string): Promise<number> {
    const text = await (await fetch(controller!.metricsUrl)).text();
    return text
      .split("\n")
      .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
  }

  /** The message of a condition once it has the wanted status. */
  const conditionMessage = async (name: string, type: string, status: string): Promise<[string, string]> => {
    const c = await waitForCondition(compute, name, type, status);
    return [c[1], c[2]];
  };

  it("a rule whose dependent is not served at that version, or not at all, is not enforced and says which field", async () => {
    const typoVersion = rule("vm-v1beta1", [{ resource: "vpcs" }]);
    (typoVersion["spec"] as { dependent: Record<string, string> }).dependent["version"] = "v1beta1";
    const typoResource = rule("vm-typo", [{ resource: "vpcs" }], {
      group: "compute.test.io",
      kind: "VirtualMachine",
      resource: "virtualmachine",
    });
    // A dependent type the rule's workspace does not export: a VPC rule written in the compute provider.
    const foreign = rule("vpc-self", [{ resource: "subnets" }], {
      group: "network.test.io",
      kind: "VPC",
      resource: "vpcs",
    });
    await apply(compute, [typoVersion, typoResource, foreign]);
    assert.deepEqual(await conditionMessage("vm-v1beta1", "ReferencesValid", "False"), [
      "DependentInvalid",
      "spec.dependent.version: APIExport compute.test.io in this rule's workspace serves virtualmachines at v1, not v1beta1",
    ]);
    assert.deepEqual(await conditionMessage("vm-typo", "ReferencesValid", "False"), [
      "DependentInvalid",
      "spec.dependent: APIExport compute.test.io in this rule's workspace does not export " +
        "virtualmachine.compute.test.io (it exports virtualmachines.compute.test.io)",
    ]);
    assert.deepEqual(await conditionMessage("vpc-self", "ReferencesValid", "False"), [
      "DependentInvalid",
      "spec.dependent: APIExport network.test.io in this rule's workspace not found",
    ]);
    for (const name of ["vm-v1beta1", "vm-typo", "vpc-self"])
      assert.equal((await conditions(compute, name))["Ready"]?.[0], "False", `${name} is not Ready`);
    // Never installed: no configuration anywhere for these rules.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(await vwc(PATHS.network), undefined);
    for (const name of ["vm-v1beta1", "vm-typo", "vpc-self"]) await remove(compute, name);
  });

  it("a dependency path naming a workspace that only binds the export is reported, not Ready", async () => {
    await apply(compute, [rule("vm-consumer", [{ resource: "vpcs", path: PATHS.consumer1 }])]);
    const ready = await waitForCondition(compute, "vm-consumer", "Ready", "False");
    assert.match(ready[2], /root:consumer1/);
    await remove(compute, "vm-consumer");
  });

  it("a broken path in one rule never holds another rule's configuration", async () => {
    // root:nope does not exist (kcp answers 403 inside it: a definite "not found" all the same); root:locked exists
    // but the controller may not read it (transient: kept only where that path was installed before).
    await createWorkspace(env.kcp.admin, "root:locked");
    await apply(compute, [
      rule("vm-deep-typo", [{ resource: "vpcs", path: "root:nope:deeper" }]),
      rule("vm-locked", [{ resource: "vpcs", path: "root:locked:net" }]),
      rule("vm-prune-me", [{ resource: "vpcs" }]),
    ]);
    await waitForProtection(PATHS.network, ["vpcs.network.test.io/v1"]);
    // Both read alike to the rule's author: whether another workspace exists is not the status's to say.
    const deep = await waitForCondition(compute, "vm-deep-typo", "WorkspacesResolved", "False");
    assert.match(deep[2], /^root:nope:deeper: workspace root:nope:deeper not found or not readable by dep-ctrl;/);
    const locked = await waitForCondition(compute, "vm-locked", "WorkspacesResolved", "False");
    assert.equal(locked[2], deep[2].replaceAll("root:nope:deeper", "root:locked:net"));
    await remove(compute, "vm-prune-me");
    await waitForProtection(PATHS.network, undefined);
    await remove(compute, "vm-deep-typo");
    await remove(compute, "vm-locked");
  });

  it("a steady state of ten rules makes no webhook configuration or status write over two resync passes", async () => {
    const names = Array.from({ length: 10 }, (_, i) => `vm-steady-${i}`);
    await apply(
      compute,
      names.map((n, i) => rule(n, [{ resource: i % 2 ? "vpcs" : "subnets" }])),
    );
    for (const n of names) await waitForCondition(compute, n, "Ready", "True");
    await waitForProtection(PATHS.network, ["subnets.network.test.io/v1", "vpcs.network.test.io/v1"]);
    // Let the pass that follows the last status write settle, then count across two full resync passes.
    const passes = async (): Promise<number> => counter("dependency_controller_reconciles_total");
    const settle = (await passes()) + 2;
    await waitFor("two passes", async () => ((await passes()) >= settle ? true : undefined));
    const writes = async (): Promise<number> =>
      (await counter("dependency_controller_webhook_configuration_writes_total")) +
      (await counter("dependency_controller_status_writes_total"));
    const before = await writes();
    const start = await passes();
    await waitFor("two more passes", async () => ((await passes()) >= start + 2 ? true : undefined));
    assert.equal(await writes(), before, "a steady state writes nothing");
    for (const n of names) await remove(compute, n);
    await waitForProtection(PATHS.network, undefined);
  });

  it("the controller lists root's Shards (workspace-resolution.yaml), each giving the dep-ctrl endpoint's shard", async () => {
    // Local targets visit the union of the dep-ctrl slice's shards and root's (src/controller/local-targets-shards.ts):
    // on one shard the Shard's spec.virtualWorkspaceURL must name the slice's shard exactly, or it is visited twice.
    const as = (token: string) =>
      loadKcpConnection({ kubeconfig: env.kcp.kubeconfigFor(token, "root", `shards-${token}.kubeconfig`) });
    const listed = await new ShardList(as(IDENTITIES.controller.token).workspaceClient, silentLogger()).read();
    assert.equal(listed.kind, "listed");
    const slices = await env.kcp.ws(PATHS.depCtrl).listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
    const endpoints = endpointUrls(slices.items, EXPORT_NAME);
    assert.equal(endpoints.length, 1);
    const bases = shardsToVisit(endpoints, listed).bases;
    assert.deepEqual(
      bases,
      shardsToVisit(endpoints).bases,
      `one shard, visited once: ${endpoints[0]} ${bases.join(" ")}`,
    );
    assert.deepEqual(
      await new ShardList(as(IDENTITIES.webhook.token).workspaceClient, silentLogger()).read(),
      { kind: "forbidden" },
      "only the controller is granted the list",
    );
  });

  describe("kcp refuses invalid rules with the schema's message", () => {
    const refuse = async (obj: KObject, message: RegExp): Promise<void> => {
      const err = await compute.request("POST", RULES_PATH, { body: obj }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isApiError(err, 422), `expected 422, got ${String(err)}`);
      assert.match(err.message, message);
    };
    const broken = (mutate: (spec: Record<string, unknown>) => void, name: string): KObject => {
      const r = rule(name, [{ resource: "vpcs" }]);
      mutate(r["spec"] as Record<string, unknown>);
      return r;
    };
    const dep0 = (spec: Record<string, unknown>): Record<string, unknown> =>
      (spec["dependencies"] as Record<string, unknown>[])[0]!;

    it("a bad workspace path", () =>
      refuse(
        broken((s) => ((dep0(s)["apiExportRef"] as Record<string, string>)["path"] = "Root:Net"), "bad-path"),
        /spec\.dependencies\[0\]\.apiExportRef\.path: Invalid value: "Root:Net": spec\.dependencies\[0\]\.apiExportRef\.path in body should match '\^\[a-z\]\[a-z0-9-\]\*/,
      ));
    it("a bad version", () =>
      refuse(
        broken((s) => ((s["dependent"] as Record<string, string>)["version"] = "v1.0"), "bad-version"),
        /spec\.dependent\.version: Invalid value: "v1\.0": spec\.dependent\.version in body should match/,
      ));
    it("a bad field path", () =>
      refuse(
        broken((s) => ((dep0(s)["fieldRef"] as Record<string, string>)["path"] = ".spec.nics[01].name"), "bad-field"),
        /spec\.dependencies\[0\]\.fieldRef\.path: Invalid value: "\.spec\.nics\[01\]\.name"/,
      ));
    it("missing fields", () =>
      refuse(
        broken((s) => {
          delete dep0(s)["fieldRef"];
          delete (s["dependent"] as Record<string, string>)["resource"];
        }, "missing"),
        /(spec\.dependencies\[0\]\.fieldRef: Required value.*spec\.dependent\.resource: Required value|spec\.dependent\.resource: Required value.*spec\.dependencies\[0\]\.fieldRef: Required value)/,
      ));
    it("an empty dependencies list", () =>
      refuse(
        broken((s) => (s["dependencies"] = []), "empty"),
        /spec\.dependencies: Invalid value: 0: spec\.dependencies in body should have at least 1 items/,
      ));
  });
});
