// The plugin and local targets (a dependency without apiExportRef: a Secret or ConfigMap of the consumer workspace
// itself), without kcp: every command's reading of a rule's dependencies includes them (the type graph's edge, the
// references check, verify and graph --objects find, the rule why names behind a blocker, the types teardown --plan
// dry-runs), and the teardown run asks a Secret's DELETE only once the Endpoint naming it has gone: no refusal for
// the order. On the code before, each of these skipped the local dependency silently.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import type { DeleteAnswer, Refusal } from "../../src/plugin/causes.ts";
import { executeTeardown } from "../../src/plugin/commands/teardown/execute.ts";
import { platformOwned, toPlanObject } from "../../src/plugin/commands/teardown/kcp-api.ts";
import type { PlanObject } from "../../src/plugin/commands/teardown/plan.ts";
import { protectedTypes, survey, type TeardownApi } from "../../src/plugin/commands/teardown/survey.ts";
import { rulesBehind, type WhyTarget } from "../../src/plugin/commands/why/report.ts";
import type { ApiResource } from "../../src/plugin/discovery.ts";
import { typeGraph, type RuleInWorkspace } from "../../src/plugin/graph.ts";
import { objectId } from "../../src/plugin/objects.ts";
import { findReferences, listingKey, type TypeListing } from "../../src/plugin/references.ts";
import { resourceFor, type Session } from "../../src/plugin/session.ts";
import type { Clock } from "../../src/util/clock.ts";
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

/** Time moves only when someone sleeps. */
class SteppingClock implements Clock {
  t = 0;
  now = (): number => this.t;
  sleep = (ms: number): Promise<void> => {
    this.t += ms;
    return Promise.resolve();
  };
  after = (): { cancel(): void } => ({ cancel: () => undefined });
}

/**
 * A consumer workspace whose webhook refuses a Secret's or ConfigMap's DELETE while an Endpoint names it; Endpoints
 * hold a finalizer a backend clears `holdMs` after their delete. Every DELETE is recorded in order.
 */
class VaultConsumer implements TeardownApi {
  readonly objs = new Map<string, { o: PlanObject; names: string[]; deletedAt?: number }>();
  readonly deletes: string[] = [];
  refused = 0;
  readonly clock: SteppingClock;
  readonly holdMs: number;
  constructor(clock: SteppingClock, holdMs: number) {
    this.clock = clock;
    this.holdMs = holdMs;
  }
  add(o: PlanObject, names: string[] = []): void {
    this.objs.set(o.id, { o, names });
  }
  private tick(): void {
    for (const [id, f] of this.objs)
      if (f.deletedAt !== undefined && this.clock.now() - f.deletedAt >= this.holdMs) this.objs.delete(id);
  }
  private refusal(o: PlanObject): Refusal | undefined {
    const by = [...this.objs.values()].filter((f) => f.names.includes(o.id));
    if (by.length === 0) return undefined;
    const blockers = by.map((f) => ({ kind: f.o.kind, name: f.o.name, field: ".spec.secretRef.name" }));
    return {
      code: 409,
      reason: "Conflict",
      message: "denied",
      webhook: "w",
      blockers,
      source: "causes",
      complete: true,
    };
  }
  list(): Promise<PlanObject[]> {
    this.tick();
    return Promise.resolve([...this.objs.values()].map((f) => ({ ...f.o })));
  }
  dryRun(o: PlanObject): Promise<DeleteAnswer> {
    const r = this.refusal(o);
    return Promise.resolve(r ? { outcome: "refused", status: 409, refusal: r } : { outcome: "allowed" });
  }
  delete(o: PlanObject): Promise<DeleteAnswer> {
    const f = this.objs.get(o.id);
    if (!f) return Promise.resolve({ outcome: "gone" });
    const r = this.refusal(f.o);
    if (r) {
      this.refused++;
      return Promise.resolve({ outcome: "refused", status: 409, refusal: r });
    }
    this.deletes.push(o.name);
    if (f.o.finalizers.length === 0) this.objs.delete(o.id);
    else {
      f.o.deleting = true;
      f.deletedAt ??= this.clock.now();
    }
    return Promise.resolve({ outcome: "allowed" });
  }
  get(o: PlanObject): Promise<PlanObject | undefined> {
    this.tick();
    const f = this.objs.get(o.id);
    return Promise.resolve(f ? { ...f.o } : undefined);
  }
  annotate(): Promise<"done" | "replaced"> {
    return Promise.resolve("done");
  }
}

const runOpts = (clock: Clock) => ({
  concurrency: 8,
  timeoutMs: 600_000,
  clock,
  pollMs: 500,
  progress: () => undefined,
});

describe("teardown run with local targets", () => {
  it("deletes the Endpoints (held by a finalizer) before any Secret or ConfigMap: 0 refused deletes", async () => {
    const clock = new SteppingClock();
    const ws = new VaultConsumer(clock, 3_000);
    for (let i = 0; i < 3; i++) {
      const secret = planObject("", "secrets", `s-${i}`);
      const ca = planObject("", "configmaps", `ca-${i}`);
      ws.add(secret);
      ws.add(ca);
      ws.add({ ...planObject("vault.test.io", "endpoints", `e-${i}`), finalizers: ["backend/hold"] }, [
        secret.id,
        ca.id,
      ]);
    }
    ws.add(planObject("", "secrets", "free-secret"));
    const r = await executeTeardown(ws, runOpts(clock));
    assert.equal(r.ok, true, r.problem);
    assert.equal(ws.objs.size, 0);
    assert.equal(ws.refused, 0, "no Secret or ConfigMap was asked while an Endpoint named it");
    assert.equal(r.refusedDeletes, 0);
    const lastEndpoint = Math.max(...["e-0", "e-1", "e-2"].map((n) => ws.deletes.indexOf(n)));
    const firstLocal = Math.min(...ws.deletes.filter((n) => !n.startsWith("e-")).map((n) => ws.deletes.indexOf(n)));
    assert.ok(lastEndpoint < firstLocal, ws.deletes.join(" "));
    assert.ok(clock.now() >= 3_000, "the Secrets waited for the Endpoints' finalizer");
  });

  it("an Endpoint that cannot go (refused for another reason) holds the Secrets only until the final wave", async () => {
    const clock = new SteppingClock();
    const ws = new VaultConsumer(clock, 0);
    const secret = planObject("", "secrets", "held");
    ws.add(secret);
    ws.add(planObject("", "secrets", "free"));
    ws.add(planObject("vault.test.io", "endpoints", "e1"), [secret.id]);
    const del = ws.delete.bind(ws);
    const forbidden: DeleteAnswer = {
      outcome: "refused",
      status: 403,
      refusal: { code: 403, reason: "Forbidden", message: "no", blockers: [], source: "none", complete: false },
    };
    ws.delete = (o) => (o.name === "e1" ? Promise.resolve(forbidden) : del(o));
    const r = await executeTeardown(ws, runOpts(clock));
    assert.equal(r.ok, false);
    assert.deepEqual(ws.deletes, ["free"], "the free Secret went in the final wave, the held one stays");
    assert.deepEqual(r.left.map((o) => o.name).sort(), ["e1", "held"]);
  });
});

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
