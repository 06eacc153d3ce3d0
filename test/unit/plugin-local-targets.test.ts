// The plugin and local targets (a dependency without apiExportRef: a Secret or ConfigMap of the consumer workspace
// itself), without kcp: every command's reading of a rule's dependencies includes them (the type graph's edge, the
// references check, verify and graph --objects find, the rule why names behind a blocker, the types teardown --plan
// dry-runs, discovery of the core types), and which Secrets and ConfigMaps teardown takes down (the run's order is in
// plugin-teardown-run.test.ts). On the code before, each of these skipped the local dependency silently.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import { platformOwned, toPlanObject } from "../../src/plugin/commands/teardown/kcp-api.ts";
import type { PlanObject } from "../../src/plugin/commands/teardown/plan.ts";
import { protectedTypes, survey, type TeardownApi } from "../../src/plugin/commands/teardown/survey.ts";
import { rulesBehind, type WhyTarget } from "../../src/plugin/commands/why/report.ts";
import type { ApiResource } from "../../src/plugin/discovery.ts";
import { typeGraph, type RuleInWorkspace } from "../../src/plugin/graph.ts";
import { objectId } from "../../src/plugin/objects.ts";
import { findReferences, listingKey, type TypeListing } from "../../src/plugin/references.ts";
import { resourceFor, type Session } from "../../src/plugin/session.ts";
import { ruleObject } from "./helpers-rules.ts";

const VAULT = "root:providers:vault";
const ENDPOINT = { group: "vault.test.io", resource: "endpoints", kind: "Endpoint" };

/** Endpoints depend on the Secret (.spec.secretRef.name) and the ConfigMap (.spec.caRef.name) next to them. */
const vaultRule = ((): RuleInWorkspace => {
  const rule = parseRule(
    ruleObject("lc-vault", "endpoint-credentials", ENDPOINT, [
      { resource: "secrets", local: true, fieldPath: ".spec.secretRef.name" },
      { resource: "configmaps", local: true, fieldPath: ".spec.caRef.name" },
    ]),
  );
  assert.ok(rule && rule.problems.length === 0 && rule.localDependencies.length === 2, JSON.stringify(rule));
  return { workspace: VAULT, rule };
})();

const meta = (name: string) => ({ metadata: { name, namespace: "default" } });
const endpoint = (name: string, secret: string, ca: string) => ({
  ...meta(name),
  spec: { secretRef: { name: secret }, caRef: { name: ca } },
});

describe("local targets in the plugin's reading of rules", () => {
  it("the type graph draws Endpoint → secrets and → configmaps of each consumer workspace", () => {
    const g = typeGraph([vaultRule]);
    const edges = g.edges.map((e) => `${e.from} -> ${e.to} ${e.fields.join(",")} ${e.rules.join(",")}`);
    assert.deepEqual(edges, [
      `${VAULT}|endpoints.vault.test.io -> (each consumer workspace)|configmaps. .spec.caRef.name ${VAULT}:endpoint-credentials`,
      `${VAULT}|endpoints.vault.test.io -> (each consumer workspace)|secrets. .spec.secretRef.name ${VAULT}:endpoint-credentials`,
    ]);
    const secrets = g.nodes.find((n) => n.id.endsWith("|secrets."));
    assert.equal(secrets?.label, "secrets");
    assert.equal(secrets?.detail, "core\n(each consumer workspace)");
  });

  it("findReferences (check, graph --objects, verify) sees the Endpoint naming its Secret and ConfigMap", () => {
    const listings = new Map<string, TypeListing>([
      [
        listingKey("vault.test.io", "endpoints"),
        { ...ENDPOINT, kind: "Endpoint", namespaced: true, items: [endpoint("e1", "held-secret", "gone-ca")] },
      ],
      [
        listingKey("", "secrets"),
        {
          group: "",
          resource: "secrets",
          kind: "Secret",
          namespaced: true,
          items: [meta("held-secret"), meta("free-secret")],
        },
      ],
      [
        listingKey("", "configmaps"),
        { group: "", resource: "configmaps", kind: "ConfigMap", namespaced: true, items: [] },
      ],
    ]);
    const refs = findReferences([vaultRule], listings).map(
      (r) => `${r.from.name} ${r.field} ${r.to.kind}/${r.to.name} ${r.state}`,
    );
    assert.deepEqual(refs, [
      "e1 .spec.caRef.name ConfigMap/gone-ca missing",
      "e1 .spec.secretRef.name Secret/held-secret exists",
    ]);
  });

  it("why names the local-target rule behind an Endpoint blocking a Secret, not behind a VPC", () => {
    const secrets: ApiResource = { group: "", version: "v1", name: "secrets", kind: "Secret", namespaced: true };
    const t: WhyTarget = { resource: secrets, name: "held-secret", namespace: "default", workspace: "root:c" };
    const b = { kind: "Endpoint", name: "e1", field: ".spec.secretRef.name" };
    assert.deepEqual(rulesBehind(b, t, [vaultRule]), [`${VAULT}:endpoint-credentials`]);
    assert.deepEqual(rulesBehind({ ...b, field: ".spec.caRef.name" }, t, [vaultRule]), []);
    const vpcs: ApiResource = { ...secrets, group: "network.test.io", name: "vpcs", kind: "VPC" };
    assert.deepEqual(rulesBehind(b, { ...t, resource: vpcs }, [vaultRule]), []);
  });

  it("teardown --plan dry-runs Secrets and ConfigMaps where a readable rule protects them, and only then", async () => {
    const scan = { rules: [vaultRule], objects: [{ workspace: VAULT, object: {} }], skipped: [] };
    assert.deepEqual([...protectedTypes(scan)!].sort(), ["configmaps.", "secrets."]);
    const objects = [planObject("", "secrets", "held-secret"), planObject("vault.test.io", "endpoints", "e1")];
    const asked: string[] = [];
    const api = { dryRun: (o: PlanObject) => (asked.push(o.name), Promise.resolve({ outcome: "allowed" })) };
    await survey(api as unknown as TeardownApi, objects, 2, protectedTypes(scan));
    assert.deepEqual(asked, ["held-secret"]);
    asked.length = 0;
    await survey(api as unknown as TeardownApi, objects, 2, new Set(["vpcs.network.test.io"]));
    assert.deepEqual(asked, [], "no rule protects Secrets: no dry run of one");
  });
});

function planObject(group: string, resource: string, name: string, localTarget = group === ""): PlanObject {
  return {
    id: objectId({ group, resource, namespace: "default", name }),
    group,
    version: "v1",
    resource,
    kind: resource === "secrets" ? "Secret" : resource === "configmaps" ? "ConfigMap" : "Endpoint",
    namespace: "default",
    name,
    uid: `uid-${name}`,
    finalizers: [],
    deleting: false,
    skipProtection: false,
    ...(localTarget ? { localTarget: true } : {}),
  };
}

describe("teardown's Secrets and ConfigMaps as listed", () => {
  const secrets: ApiResource = { group: "", version: "v1", name: "secrets", kind: "Secret", namespaced: true };
  const configmaps: ApiResource = { ...secrets, name: "configmaps", kind: "ConfigMap" };
  it("are marked local targets; an Endpoint is not", () => {
    assert.equal(toPlanObject(secrets, meta("s"), new Set())?.localTarget, true);
    const endpoints: ApiResource = { ...secrets, group: "vault.test.io", name: "endpoints", kind: "Endpoint" };
    assert.equal(toPlanObject(endpoints, meta("e"), new Set())?.localTarget, undefined);
  });
  it("leave out what the platform owns: legacy ServiceAccount tokens and kube-root-ca.crt", () => {
    assert.equal(platformOwned(secrets, { ...meta("t"), type: "kubernetes.io/service-account-token" }), true);
    assert.equal(platformOwned(secrets, { ...meta("t"), type: "Opaque" }), false);
    assert.equal(platformOwned(configmaps, meta("kube-root-ca.crt")), true);
    assert.equal(platformOwned(configmaps, meta("ca")), false);
    assert.equal(platformOwned({ group: "x.io", name: "configmaps" }, meta("kube-root-ca.crt")), false);
  });
});

describe("the core types a local target names, as the commands that list rule types find them", () => {
  it('resourceFor(secrets in group "") finds /api/v1\'s secrets: check, verify and graph --objects list them', async () => {
    const asked: string[] = [];
    const docs: Record<string, unknown> = {
      "/apis": { groups: [{ name: "vault.test.io", preferredVersion: { version: "v1" } }] },
      "/api/v1": { resources: [{ name: "secrets", kind: "Secret", namespaced: true, verbs: ["list", "delete"] }] },
      "/apis/vault.test.io/v1": { resources: [{ name: "endpoints", kind: "Endpoint", namespaced: true }] },
    };
    const ws = { get: (p: string) => (asked.push(p), Promise.resolve(docs[p])) };
    const s = { ws, workspace: "root:c", namespace: "default" } as unknown as Session;
    const found = await resourceFor(s, "", "secrets");
    assert.deepEqual(found && { group: found.group, name: found.name, kind: found.kind }, {
      group: "",
      name: "secrets",
      kind: "Secret",
    });
    assert.ok(asked.includes("/api/v1"), asked.join(" "));
  });
});
