// The generated kcp manifests: deploy/kcp/ must match what src/api/ generates, and the schema name must follow
// the schema's content (kcp's APIResourceSchemas are immutable, so a changed schema needs a new name).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse, parseAllDocuments } from "yaml";
import {
  apiExport,
  apiResourceSchema,
  deployFiles,
  providerApiBinding,
  schemaName,
  VWC_PERMISSION_CLAIM,
} from "../../src/api/manifests.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

describe("generated manifests", () => {
  for (const [rel, content] of Object.entries(deployFiles())) {
    it(`${rel} is up to date (else run: node hack/generate.ts)`, () => {
      let onDisk: string;
      try {
        onDisk = readFileSync(path.join(root, rel), "utf8");
      } catch {
        assert.fail(`${rel} is missing: run node hack/generate.ts`);
      }
      assert.equal(onDisk, content, `${rel} is stale: run node hack/generate.ts and commit the result`);
    });
  }

  it("names the schema v<hash8>.dependencyrules.dependencies.opendefense.cloud and the export points at it", () => {
    const schema = apiResourceSchema() as { metadata: { name: string } };
    assert.match(schema.metadata.name, /^v[0-9a-f]{8}\.dependencyrules\.dependencies\.opendefense\.cloud$/);
    const exp = parse(deployFiles()["deploy/kcp/apiexport.yaml"]!) as {
      spec: { resources: { schema: string; storage: unknown }[] };
    };
    assert.equal(exp.spec.resources[0]?.schema, schema.metadata.name);
    assert.deepEqual(exp.spec.resources[0]?.storage, { crd: {} });
  });

  it("changes the schema name when the schema changes, and only then", () => {
    const spec = (apiResourceSchema() as { spec: Record<string, unknown> }).spec;
    const same = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>;
    assert.equal(schemaName(same), schemaName(spec));
    // Key order is not content.
    const reordered = Object.fromEntries(Object.entries(spec).reverse());
    assert.equal(schemaName(reordered), schemaName(spec));
    const changed = JSON.parse(JSON.stringify(spec)) as {
      versions: { schema: { description: string } }[];
    };
    changed.versions[0]!.schema.description += " ";
    assert.notEqual(schemaName(changed), schemaName(spec));
  });

  it("puts the OpenAPI schema itself in versions[].schema (kcp has no openAPIV3Schema wrapper)", () => {
    const v = (apiResourceSchema() as { spec: { versions: { schema: Record<string, unknown> }[] } }).spec.versions[0]!;
    assert.equal(v.schema["type"], "object");
    assert.deepEqual(v.schema["required"], ["spec"]);
  });

  it("serves one cluster-scoped version with the status subresource and printer columns", () => {
    const spec = (apiResourceSchema() as { spec: { scope: string; versions: Record<string, unknown>[] } }).spec;
    assert.equal(spec.scope, "Cluster");
    assert.equal(spec.versions.length, 1);
    const v = spec.versions[0]!;
    assert.deepEqual(
      [v["name"], v["served"], v["storage"], v["subresources"]],
      ["v1alpha1", true, true, { status: {} }],
    );
    const columns = (v["additionalPrinterColumns"] as { name: string; jsonPath: string }[]).map(
      (c) => `${c.name}=${c.jsonPath}`,
    );
    assert.deepEqual(columns, [
      "Dependent=.spec.dependent.kind",
      "Enforcement=.spec.enforcement",
      "Dependencies=.status.dependencyCount",
      'Ready=.status.conditions[?(@.type=="Ready")].status',
      "Age=.metadata.creationTimestamp",
    ]);
  });

  it("claims validatingwebhookconfigurations and read-only exports/schemas, and the binding accepts all three", () => {
    const exportClaims = (apiExport() as { spec: { permissionClaims: unknown[] } }).spec.permissionClaims;
    assert.deepEqual(exportClaims, [
      {
        group: "admissionregistration.k8s.io",
        resource: "validatingwebhookconfigurations",
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
      { group: "apis.kcp.io", resource: "apiexports", verbs: ["get", "list", "watch"] },
      { group: "apis.kcp.io", resource: "apiresourceschemas", verbs: ["get", "list", "watch"] },
    ]);
    const binding = providerApiBinding("root:org:dep-ctrl") as {
      spec: { reference: unknown; permissionClaims: Record<string, unknown>[] };
    };
    assert.deepEqual(binding.spec.reference, {
      export: { path: "root:org:dep-ctrl", name: "dependencies.opendefense.cloud" },
    });
    assert.deepEqual(
      binding.spec.permissionClaims,
      exportClaims.map((c) => ({ ...(c as object), selector: { matchAll: true }, state: "Accepted" })),
    );
    assert.deepEqual((binding.spec.permissionClaims[0] as { verbs?: unknown }).verbs, [...VWC_PERMISSION_CLAIM.verbs]);
  });

  it("bounds binders by a local maximal permission policy that grants everything on rules but not their status", () => {
    const exp = parse(deployFiles()["deploy/kcp/apiexport.yaml"]!) as { spec: { maximalPermissionPolicy?: unknown } };
    assert.deepEqual(exp.spec.maximalPermissionPolicy, { local: {} });
    const docs = parseAllDocuments(deployFiles()["deploy/kcp/maximal-permission-policy.yaml"]!).map(
      (d) => d.toJS() as Record<string, unknown>,
    );
    const role = docs.find((d) => d["kind"] === "ClusterRole") as {
      metadata: { name: string };
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const binding = docs.find((d) => d["kind"] === "ClusterRoleBinding") as {
      roleRef: { kind: string; name: string };
      subjects: { kind: string; name: string }[];
    };
    assert.equal(docs.length, 2);
    assert.deepEqual(role.rules, [
      { apiGroups: ["dependencies.opendefense.cloud"], resources: ["dependencyrules"], verbs: ["*"] },
    ]);
    // A subresource is granted only by naming it (or "*" resources): neither may appear, or tenants write status.
    const resources = role.rules.flatMap((r) => r.resources);
    assert.ok(!resources.some((r) => r.includes("/") || r.includes("*")), resources.join(", "));
    assert.deepEqual(binding.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "apis.kcp.io:binding:system:authenticated" },
    ]);
  });
});
