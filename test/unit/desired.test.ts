// Desired webhook configurations (union over all rules per provider workspace) and the writes that reach them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type LogicalClusterName } from "../../src/api/types.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import { keptWorkspaces, planActions, type ExistingConfiguration } from "../../src/controller/actions.ts";
import {
  buildConfiguration,
  desiredConfigurations,
  WORKSPACE_PATHS_ANNOTATION,
  type ValidatingWebhookConfiguration,
} from "../../src/controller/desired.ts";
import { parseRule, type ParsedRule } from "../../src/api/rule.ts";
import type { Resolution } from "../../src/kcp/workspaces.ts";
import { ruleObject } from "./helpers-rules.ts";

const NET = logicalClusterName("netcluster");
const STORAGE = logicalClusterName("storagecluster");
const BASE = "https://webhook.example:9443";

function rule(...args: Parameters<typeof ruleObject>): ParsedRule {
  const r = parseRule(ruleObject(...args));
  assert.ok(r);
  return r;
}

const resolutions = new Map<string, Resolution>([
  ["root:network-provider", { ok: true, cluster: NET }],
  ["root:org:storage", { ok: true, cluster: STORAGE }],
  ["root:missing", { ok: false, reason: "workspace root:missing not found" }],
]);

function desired(rules: ParsedRule[], caBundle?: string): Map<LogicalClusterName, ValidatingWebhookConfiguration> {
  return desiredConfigurations({ rules, resolutions, webhookBaseUrl: BASE, ...(caBundle ? { caBundle } : {}) })
    .configurations;
}

const resourcesOf = (c: ValidatingWebhookConfiguration | undefined): string[] =>
  (c?.webhooks?.[0]?.rules ?? []).map((r) => `${r.apiGroups.join()}/${r.apiVersions.join()}/${r.resources.join()}`);

describe("desiredConfigurations", () => {
  it("builds one configuration per provider workspace with every webhook setting pinned", () => {
    const vwcs = desired([rule("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }])], "Q0E=");
    assert.deepEqual([...vwcs.keys()], [NET]);
    assert.deepEqual(vwcs.get(NET), {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: {
        name: "dependency-controller",
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
        annotations: { [WORKSPACE_PATHS_ANNOTATION]: "root:network-provider" },
      },
      webhooks: [
        {
          name: "dependency-controller.dependencies.opendefense.cloud",
          clientConfig: { url: `${BASE}/validate/${NET}`, caBundle: "Q0E=" },
          rules: [
            {
              operations: ["DELETE"],
              apiGroups: ["network.test.io"],
              apiVersions: ["v1"],
              resources: ["vpcs"],
              scope: "*",
            },
          ],
          failurePolicy: "Fail",
          sideEffects: "None",
          admissionReviewVersions: ["v1"],
          timeoutSeconds: 10,
          matchPolicy: "Equivalent",
        },
      ],
    });
  });

  it("merges rules of several providers into one configuration, deduplicated and sorted", () => {
    const vwcs = desired([
      rule("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }, { resource: "subnets" }]),
      rule("lb", "lb", { group: "lb.test.io", resource: "loadbalancers", kind: "LoadBalancer" }, [
        { resource: "vpcs" },
        { resource: "vpcs", version: "v2" },
      ]),
    ]);
    assert.deepEqual(resourcesOf(vwcs.get(NET)), [
      "network.test.io/v1/subnets",
      "network.test.io/v1/vpcs",
      "network.test.io/v2/vpcs",
    ]);
  });

  it("is the same whatever order the rules come in", () => {
    const a = rule("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }]);
    const b = rule("compute", "vm2", { resource: "disks", kind: "Disk" }, [
      { resource: "subnets" },
      { resource: "buckets", path: "root:org:storage", group: "storage.test.io" },
    ]);
    assert.deepEqual(desired([a, b]), desired([b, a]));
    assert.deepEqual([...desired([b, a]).keys()], [NET, STORAGE]);
  });

  it("leaves out dependencies whose workspace is unresolved, and records which clusters each rule feeds", () => {
    const state = desiredConfigurations({
      rules: [
        rule("compute", "vm", { resource: "virtualmachines" }, [
          { resource: "vpcs", path: "root:missing" },
          { resource: "buckets", path: "root:org:storage", group: "storage.test.io" },
        ]),
      ],
      resolutions,
      webhookBaseUrl: `${BASE}/`,
    });
    assert.deepEqual([...state.configurations.keys()], [STORAGE]);
    assert.equal(state.configurations.get(STORAGE)?.webhooks?.[0]?.clientConfig.url, `${BASE}/validate/${STORAGE}`);
    assert.equal(state.configurations.get(STORAGE)?.webhooks?.[0]?.clientConfig.caBundle, undefined);
    assert.deepEqual(state.contributions.get("compute/vm"), new Set([STORAGE]));
  });

  it("protects nothing for a rule whose dependent is invalid, and skips only the invalid dependency otherwise", () => {
    const badDependent = ruleObject("compute", "bad", { resource: "Virtual-Machines" }, [{ resource: "vpcs" }]);
    const badPath = ruleObject("compute", "half", { resource: "virtualmachines" }, [
      { resource: "vpcs", fieldPath: ".spec" },
      { resource: "subnets" },
    ]);
    const vwcs = desired([parseRule(badDependent)!, parseRule(badPath)!]);
    assert.deepEqual(resourcesOf(vwcs.get(NET)), ["network.test.io/v1/subnets"]);
  });

  it("wants nothing without rules", () => {
    assert.equal(desired([]).size, 0);
  });
});

function existing(
  cluster: LogicalClusterName,
  obj: ValidatingWebhookConfiguration,
  ours = true,
): ExistingConfiguration {
  const labels: Record<string, string> = ours ? { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } : { other: "x" };
  return {
    cluster,
    object: { ...obj, metadata: { ...obj.metadata, labels, uid: `uid-${cluster}`, resourceVersion: "7" } },
  };
}

const vpcsOnly = buildConfiguration(NET, [{ group: "network.test.io", version: "v1", resource: "vpcs" }], BASE, "Q0E=");

describe("planActions", () => {
  const want = new Map([[NET, vpcsOnly]]);

  it("creates a missing configuration", () => {
    const actions = planActions(want, [], { keep: new Set() });
    assert.deepEqual(
      actions.map((a) => [a.kind, a.cluster]),
      [["create", NET]],
    );
  });

  it("does nothing when the configuration matches, including with the API server's defaults filled in", () => {
    const defaulted = structuredClone(vpcsOnly);
    defaulted.webhooks![0]!.namespaceSelector = {};
    defaulted.webhooks![0]!.objectSelector = {};
    assert.deepEqual(planActions(want, [existing(NET, defaulted)], { keep: new Set() }), []);
  });

  for (const [what, mutate, reason] of [
    [
      "rules",
      (w: ValidatingWebhookConfiguration) =>
        w.webhooks![0]!.rules!.push({
          operations: ["DELETE"],
          apiGroups: ["x"],
          apiVersions: ["v1"],
          resources: ["y"],
          scope: "*",
        }),
      "rules changed",
    ],
    [
      "url",
      (w: ValidatingWebhookConfiguration) => (w.webhooks![0]!.clientConfig.url = "https://old/validate/x"),
      "url changed",
    ],
    [
      "caBundle",
      (w: ValidatingWebhookConfiguration) => (w.webhooks![0]!.clientConfig.caBundle = "b2xk"),
      "caBundle changed",
    ],
    [
      "failurePolicy",
      (w: ValidatingWebhookConfiguration) => (w.webhooks![0]!.failurePolicy = "Ignore"),
      "webhook settings changed",
    ],
    [
      "objectSelector",
      (w: ValidatingWebhookConfiguration) => (w.webhooks![0]!.objectSelector = { matchLabels: { a: "b" } }),
      "webhook settings changed",
    ],
    [
      "extra webhook",
      (w: ValidatingWebhookConfiguration) => w.webhooks!.push({ name: "other", clientConfig: {} }),
      "webhooks changed",
    ],
  ] as const) {
    it(`updates when the ${what} differs, keeping others' metadata and the resourceVersion`, () => {
      const old = structuredClone(vpcsOnly);
      mutate(old);
      const have = existing(NET, old);
      have.object.metadata.annotations = { note: "kept" };
      const actions = planActions(want, [have], { keep: new Set() });
      assert.equal(actions.length, 1);
      const a = actions[0]!;
      assert.equal(a.kind, "update");
      assert.equal(a.reason, reason);
      if (a.kind !== "update") return;
      assert.deepEqual(a.object.webhooks, vpcsOnly.webhooks);
      assert.equal(a.object.metadata.resourceVersion, "7");
      assert.deepEqual(a.object.metadata.annotations, { note: "kept", [WORKSPACE_PATHS_ANNOTATION]: "" });
      assert.equal(a.object.metadata.labels?.[MANAGED_BY_LABEL], MANAGED_BY_VALUE);
    });
  }

  it("deletes configurations of ours that no rule wants, with their uid as precondition", () => {
    const actions = planActions(new Map(), [existing(STORAGE, vpcsOnly)], { keep: new Set() });
    assert.deepEqual(actions, [
      {
        kind: "delete",
        cluster: STORAGE,
        name: "dependency-controller",
        uid: `uid-${STORAGE}`,
        reason: "no rule protects resources in this workspace",
      },
    ]);
  });

  it("sees no change in kcp's key order: a steady state plans no write", () => {
    const reordered = structuredClone(vpcsOnly);
    const w = reordered.webhooks![0]!;
    w.rules = w.rules!.map((r) => ({
      scope: r.scope,
      resources: r.resources,
      operations: r.operations,
      apiVersions: r.apiVersions,
      apiGroups: r.apiGroups,
    }));
    reordered.webhooks = [Object.fromEntries(Object.entries(w).reverse()) as typeof w];
    assert.deepEqual(planActions(want, [existing(NET, reordered)], { keep: new Set() }), []);
  });

  it("updates a configuration whose workspace paths annotation differs (e.g. written by an older version)", () => {
    const targets = [{ group: "network.test.io", version: "v1", resource: "vpcs" }];
    const withPath = buildConfiguration(NET, targets, BASE, "Q0E=", ["root:net"]);
    const old = structuredClone(withPath);
    delete old.metadata.annotations;
    const actions = planActions(new Map([[NET, withPath]]), [existing(NET, old)], { keep: new Set() });
    assert.deepEqual(
      actions.map((a) => a.reason),
      ["workspace paths changed"],
    );
  });

  it("keeps only the workspaces it is told to keep, and prunes the others", () => {
    const actions = planActions(new Map(), [existing(STORAGE, vpcsOnly), existing(NET, vpcsOnly)], {
      keep: new Set([STORAGE]),
    });
    assert.deepEqual(
      actions.map((a) => `${a.kind} ${a.cluster}`),
      [`delete ${NET}`],
    );
  });

  it("never touches a configuration without our label, even one with our name", () => {
    const foreign = existing(NET, vpcsOnly, false);
    foreign.object.webhooks![0]!.failurePolicy = "Ignore";
    assert.deepEqual(planActions(new Map(), [foreign], { keep: new Set() }), []);
    // With a rule wanting that workspace the plan is a create; kcp refuses it (name taken) and status says why.
    assert.deepEqual(
      planActions(want, [foreign], { keep: new Set() }).map((a) => a.kind),
      ["create"],
    );
  });

  it("plans the same writes whatever order existing configurations come in", () => {
    const list = [existing(STORAGE, vpcsOnly), existing(logicalClusterName("zz"), vpcsOnly), existing(NET, vpcsOnly)];
    const a = planActions(want, list, { keep: new Set() });
    const b = planActions(want, [...list].reverse(), { keep: new Set() });
    assert.deepEqual(a, b);
    assert.deepEqual(
      a.map((x) => `${x.kind} ${x.cluster}`),
      [`delete ${STORAGE}`, "delete zz"],
    );
  });

  // A structural count, not a time: each read of an observed configuration's workspace is counted. Linear planning
  // reads each one a fixed number of times; the old scan per desired workspace read n(n+1)/2 (2,001,000 at 2,000).
  it("reads each observed configuration a bounded number of times, however many workspaces (linear, not quadratic)", () => {
    const n = 2000;
    const clusters = Array.from({ length: n }, (_, i) => logicalClusterName(`c${i}`));
    let reads = 0;
    const counted: ExistingConfiguration[] = clusters.map((cluster) => ({
      object: vpcsOnly,
      get cluster() {
        reads++;
        return cluster;
      },
    }));
    const all = new Map(clusters.map((c) => [c, vpcsOnly]));
    assert.deepEqual(planActions(all, counted, { keep: new Set() }), []);
    assert.ok(reads <= 3 * n, `${reads} reads of ${n} configurations`);
    reads = 0;
    const actions = planActions(new Map([...all].slice(0, n / 2)), counted, { keep: new Set() });
    assert.equal(actions.filter((a) => a.kind === "delete").length, n / 2);
    assert.ok(reads <= 4 * n, `${reads} reads of ${n} configurations when half are pruned`);
  });
});

describe("keptWorkspaces", () => {
  const withPaths = (cluster: LogicalClusterName, paths?: string): ExistingConfiguration => {
    const object = structuredClone(vpcsOnly);
    object.metadata.annotations = paths === undefined ? {} : { [WORKSPACE_PATHS_ANNOTATION]: paths };
    return { cluster, object };
  };

  it("keeps nothing while every path resolves", () => {
    assert.deepEqual([...keptWorkspaces([withPaths(NET, "root:net")], [])], []);
  });

  it("keeps only the workspaces whose configuration lists a path in doubt", () => {
    const existing = [withPaths(NET, "root:net,root:net-alias"), withPaths(STORAGE, "root:storage")];
    assert.deepEqual([...keptWorkspaces(existing, ["root:net-alias"])], [NET]);
  });

  it("keeps a configuration without the annotation while any path is in doubt: it could serve that path", () => {
    assert.deepEqual([...keptWorkspaces([withPaths(NET)], ["root:x"])], [NET]);
  });
});
