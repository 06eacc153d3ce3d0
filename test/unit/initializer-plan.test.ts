// The provider workspace initializer's decisions (src/controller/initializer-plan.ts): from what a new workspace holds
// to the writes it lacks, and when the initializer may go. No kcp: the facts are what kcp would answer.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import {
  acceptedClaims,
  APIBINDINGS_PATH,
  CONSENT_BINDING_PATH,
  CONSENT_ROLE_PATH,
  defaultBindingName,
  indexConsentBinding,
  indexConsentRole,
  indexConsentRules,
  planInitialization,
  withoutInitializer,
  type ObservedBinding,
  type WorkspaceFacts,
} from "../../src/controller/initializer-plan.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const target = { depCtrlPath: "root:dep-ctrl", exportName: "dependencies.opendefense.cloud", webhookUser: "hook" };
const CLUSTER = "2x9ab1cd3ef";
/** Computed by kcp v0.30.0's generateAPIBindingName (Go: sha224, big.Int.Text(62), 5 chars lowercased). */
const KCP_NAME = "dependencies.opendefense.cloud-hwtca";

function binding(claims: NonNullable<ObservedBinding["spec"]>["permissionClaims"], phase = "Bound"): ObservedBinding {
  return {
    metadata: { name: KCP_NAME, resourceVersion: "7" },
    spec: { reference: { export: { path: "root:dep-ctrl", name: target.exportName } }, permissionClaims: claims },
    status: { phase },
  };
}

const withMeta = <T extends Record<string, unknown>>(m: T) =>
  ({
    ...m,
    metadata: { ...(m["metadata"] as object), resourceVersion: "3" },
  }) as T & { metadata: { resourceVersion: string } };

function complete(over: Partial<WorkspaceFacts> = {}): WorkspaceFacts {
  return {
    cluster: CLUSTER,
    bindings: [binding(acceptedClaims())],
    consentRole: withMeta(indexConsentRole()),
    consentBinding: withMeta(indexConsentBinding("hook")),
    ...over,
  };
}

describe("provider workspace initializer: plan", () => {
  it("names a binding it creates as kcp's default-binding initializer would (two initializers, one binding)", () => {
    assert.equal(defaultBindingName(CLUSTER, "root:dep-ctrl", "dependencies.opendefense.cloud"), KCP_NAME);
    assert.equal(defaultBindingName("root", "root", "tenancy.kcp.io"), "tenancy.kcp.io-by23s");
  });

  it("writes binding, consent role and consent binding into an empty workspace", () => {
    const plan = planInitialization({ cluster: CLUSTER, bindings: [] }, target);
    assert.equal(plan.kind, "write");
    if (plan.kind !== "write") return;
    assert.deepEqual(
      plan.writes.map((w) => `${w.method} ${w.path}`),
      [
        `POST ${APIBINDINGS_PATH}`,
        "POST /apis/rbac.authorization.k8s.io/v1/clusterroles",
        "POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      ],
    );
    const b = plan.writes[0]!.body as { metadata: { name: string }; spec: { permissionClaims: unknown[] } };
    assert.equal(b.metadata.name, KCP_NAME);
    assert.deepEqual(b.spec.permissionClaims, acceptedClaims());
    assert.deepEqual(plan.writes[2]!.body, indexConsentBinding("hook"));
  });

  it("accepts the claims of kcp's default binding, keeping claims of other resources as they are", () => {
    const pending = acceptedClaims().map(({ state: _s, selector: _x, ...c }) => c);
    const foreign = { group: "", resource: "secrets", verbs: ["get"], state: "Rejected" };
    const plan = planInitialization(complete({ bindings: [binding([...pending, foreign], "Bound")] }), target);
    assert.equal(plan.kind, "write");
    if (plan.kind !== "write") return;
    assert.equal(plan.writes.length, 1);
    const w = plan.writes[0]!;
    assert.equal(`${w.method} ${w.path}`, `PUT ${APIBINDINGS_PATH}/${KCP_NAME}`);
    const body = w.body as {
      metadata: { resourceVersion: string };
      spec: { permissionClaims: unknown[] };
      status?: unknown;
    };
    assert.equal(body.metadata.resourceVersion, "7", "an update carries the observed resourceVersion");
    assert.equal(body.status, undefined);
    assert.deepEqual(body.spec.permissionClaims, [foreign, ...acceptedClaims()]);
  });

  it("treats a claim accepted for some objects only, or with fewer verbs, as not accepted", () => {
    const narrowed = acceptedClaims().map((c, i) => (i === 0 ? { ...c, selector: { matchLabels: { a: "b" } } } : c));
    assert.equal(planInitialization(complete({ bindings: [binding(narrowed)] }), target).kind, "write");
    const fewer = acceptedClaims().map((c, i) => (i === 1 ? { ...c, verbs: ["get"] } : c));
    assert.equal(planInitialization(complete({ bindings: [binding(fewer)] }), target).kind, "write");
  });

  it("creates its own binding when the workspace binds only other exports, or the same name elsewhere", () => {
    const other = binding(acceptedClaims());
    other.spec!.reference!.export = { path: "root:somewhere-else", name: target.exportName };
    const plan = planInitialization(complete({ bindings: [other] }), target);
    assert.equal(plan.kind === "write" && plan.writes[0]!.method, "POST");
  });

  it("puts a consent back that someone narrowed or rebound", () => {
    const narrowed = withMeta({ ...indexConsentRole(), rules: indexConsentRules("one-export") });
    const plan = planInitialization(complete({ consentRole: narrowed }), target);
    assert.equal(
      plan.kind === "write" && `${plan.writes[0]!.method} ${plan.writes[0]!.path}`,
      `PUT ${CONSENT_ROLE_PATH}`,
    );
    const rebound = withMeta(indexConsentBinding("someone-else"));
    const p2 = planInitialization(complete({ consentBinding: rebound }), target);
    assert.equal(p2.kind === "write" && `${p2.writes[0]!.method} ${p2.writes[0]!.path}`, `PUT ${CONSENT_BINDING_PATH}`);
  });

  it("waits for kcp to bind the export, then releases; a complete workspace needs no write", () => {
    const waiting = planInitialization(complete({ bindings: [binding(acceptedClaims(), "Binding")] }), target);
    assert.equal(waiting.kind, "wait");
    assert.deepEqual(planInitialization(complete(), target), { kind: "release" });
  });

  it("removes only its own initializer", () => {
    assert.deepEqual(
      withoutInitializer(["system:apibindings", "root:dependency-provider"], "root:dependency-provider"),
      ["system:apibindings"],
    );
  });
});

describe("provider workspace initializer: index consent", () => {
  it("for one export is exactly deploy/rbac/provider-index.yaml (one model of the consent)", () => {
    const text = readFileSync(path.join(root, "deploy/rbac/provider-index.yaml"), "utf8").replaceAll(
      "${DEPENDENT_EXPORT}",
      "compute.test.io",
    );
    const role = parseAllDocuments(text)
      .map((d) => d.toJS() as { kind?: string; rules?: unknown })
      .find((d) => d?.kind === "ClusterRole");
    assert.deepEqual(role?.rules, indexConsentRules("compute.test.io"));
  });

  it("for a provider workspace covers every export of it and nothing more", () => {
    const rules = indexConsentRules() as { resources?: string[]; resourceNames?: string[]; verbs: string[] }[];
    assert.ok(rules.every((r) => r.resourceNames === undefined));
    assert.ok(rules.every((r) => r.verbs.every((v) => ["get", "list", "watch", "access"].includes(v))));
  });
});
