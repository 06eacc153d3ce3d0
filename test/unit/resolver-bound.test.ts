// What one rule can cost kcp in workspace reads, counted on a kcp stand-in and a fake clock: a rule of 32 dependency
// paths under a parent that does not exist, at admission (/validate-rules) and per minute in each process that
// resolves paths (the webhook: its rule check and its registry, one resolver; the controller: its passes). The bound
// stated in docs/architecture.md: at most paths × (segments - 1) GETs at admission and in any minute per process.
// A path of 125 segments (what the original's 253 characters allow) is over the depth cap: refused unread.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import type { DependencyRule } from "../../src/api/types.ts";
import { MAX_DEPENDENCIES } from "../../src/api/schema.ts";
import { MAX_PROVIDER_PATH_SEGMENTS } from "../../src/api/wire.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import type { RuleObject } from "../../src/controller/plan.ts";
import { Reconciler } from "../../src/controller/reconciler.ts";
import { APIEXPORTS_PATH, APIRESOURCESCHEMAS_PATH } from "../../src/kcp/exports.ts";
import { ApiError, type RequestOptions } from "../../src/kcp/rest.ts";
import { WorkspaceResolver } from "../../src/kcp/workspaces.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import type { AdmissionRequest } from "../../src/webhook/admission.ts";
import { admitRule } from "../../src/webhook/rules/rule-admission.ts";
import { RuleSource, type RuleWatch } from "../../src/webhook/rules/source.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { ruleObject } from "./helpers-rules.ts";
import { CountingKcp } from "./resolver-fake-kcp.ts";
import { MemoryVerdictBook } from "../support/verdict-book.ts";

const P = MAX_DEPENDENCIES;
const D = MAX_PROVIDER_PATH_SEGMENTS;
const BOUND = P * (D - 1);
const COMPUTE = "compute";

/** `n` distinct paths of `segments` one- or two-letter segments under root:m, which does not exist. */
function pathsUnderMissing(n: number, segments: number, ownParent = false): string[] {
  const letter = (i: number): string => String.fromCharCode(97 + (i % 26));
  return Array.from({ length: n }, (_, i) => {
    const tail = `${letter(Math.floor(i / 26))}:${letter(i)}`; // the last two segments tell the paths apart
    const head = ownParent ? `root:m${letter(i)}${letter(Math.floor(i / 26))}` : "root:m";
    return `${head}${":a".repeat(segments - 2 - head.split(":").length)}:${tail}`;
  });
}

const rule = (paths: string[]): Record<string, unknown> =>
  ruleObject(
    COMPUTE,
    "vm",
    { resource: "virtualmachines" },
    paths.map((path) => ({ resource: "vpcs", path })),
  );

/** The dependent's export, as the rule's own workspace serves it; nothing else is served. */
const exportFacts = (cluster: string) =>
  Promise.resolve(
    cluster === COMPUTE
      ? {
          found: true as const,
          resources: [{ group: "compute.test.io", name: "virtualmachines", schema: "v1.vm" }],
          schemas: new Map([["v1.vm", { kind: "VirtualMachine", versions: [{ name: "v1", served: true }] }]]),
        }
      : { found: false as const, definite: true as const },
  );

const create = (object: Record<string, unknown>): AdmissionRequest => ({
  uid: "u",
  operation: "CREATE",
  resource: { group: "dependencies.opendefense.cloud", version: "v1alpha1", resource: "dependencyrules" },
  name: "vm",
  object,
});

/** Runs `tick` every `everyMs` for `minutes` minutes; the reads of each minute. */
async function readsPerMinute(kcp: CountingKcp, clock: FakeClock, minutes: number, tick: () => Promise<void>) {
  const counts: number[] = [];
  for (let m = 0; m < minutes; m++) {
    const before = kcp.gets;
    for (let s = 0; s < 60; s++) {
      await tick();
      await clock.advance(1_000);
    }
    counts.push(kcp.gets - before);
  }
  return counts;
}

/** The webhook's use: the rule check at apply time, then the registry rebuilding on its own schedule. */
async function webhook(object: Record<string, unknown>, minutes = 3, kcp = new CountingKcp()) {
  const clock = new FakeClock();
  const resolver = new WorkspaceResolver({ base: kcp, clock });
  const deps = { clock, resolve: resolver.resolve.bind(resolver), fetchExport: exportFacts };
  const decision = await admitRule(create(object), deps);
  const atAdmission = kcp.gets;
  let onChange = (): void => undefined;
  const watch: RuleWatch = {
    start: () => undefined,
    stop: () => undefined,
    hasSynced: () => true,
    list: () => [object as unknown as DependencyRule],
  };
  const source = new RuleSource({
    watch: (cb) => ((onChange = cb), watch),
    resolver,
    logger: silentLogger(),
    clock,
  });
  source.start();
  onChange();
  let t = 0;
  // An author applying the rule again every 10 s, besides.
  const perMinute = await readsPerMinute(kcp, clock, minutes, async () => {
    if (t++ % 10 === 9) await admitRule(create(object), deps);
  });
  source.stop();
  return { decision, atAdmission, perMinute };
}

/** The controller's use: a pass every second (its resync is 30 s; errors back off from 1 s). */
async function controller(object: Record<string, unknown>, minutes = 3, kcp = new CountingKcp()) {
  const clock = new FakeClock();
  const rv = { n: 1 };
  const stored = { ...object, metadata: { ...(object["metadata"] as object), resourceVersion: "1" } } as RuleObject;
  const reconciler = new Reconciler({
    rules: {
      listWithEndpoints: () => [{ endpoint: "e", object: stored }],
      hasSynced: () => true,
      endpoints: () => ["e"],
    },
    configurations: { listWithEndpoints: () => [], hasSynced: () => true },
    resolver: new WorkspaceResolver({ base: kcp, clock }),
    clientFor: (_endpoint, cluster) => ({ request: (m, p, o) => workspaceAnswer(cluster, m, p, o, rv) }),
    webhookBaseUrl: "https://webhook:9443",
    caBundle: () => undefined,
    mayWrite: () => true,
    verdicts: new MemoryVerdictBook(),
    exportName: "dependencies.opendefense.cloud",
    logger: silentLogger(),
    metrics: createMetrics(new Registry()),
    clock,
  });
  const perMinute = await readsPerMinute(kcp, clock, minutes, async () => {
    await reconciler.reconcile().catch(() => ({}));
  });
  return { perMinute };
}

/** The rule's own workspace through the virtual workspace: its export and schema; status writes succeed. */
function workspaceAnswer<T>(cluster: string, method: string, path: string, opts: RequestOptions = {}, rv = { n: 1 }) {
  return Promise.resolve().then((): T => {
    if (method === "PUT") {
      const body = opts.body as RuleObject;
      return { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv.n) } } as T;
    }
    if (cluster === COMPUTE && path === `${APIEXPORTS_PATH}/compute.test.io`)
      return { spec: { resources: [{ group: "compute.test.io", name: "virtualmachines", schema: "v1.vm" }] } } as T;
    if (cluster === COMPUTE && path === `${APIRESOURCESCHEMAS_PATH}/v1.vm`)
      return { spec: { names: { kind: "VirtualMachine" }, versions: [{ name: "v1", served: true }] } } as T;
    throw new ApiError(method, path, 404, "NotFound", "not found");
  });
}

describe("what one rule costs kcp in workspace reads", () => {
  it("a rule of 32 paths of 125 segments is refused at admission without a read, and stored costs none", async () => {
    const paths = pathsUnderMissing(P, 125);
    assert.equal(new Set(paths).size, P);
    assert.ok(paths.every((p) => p.split(":").length === 125 && p.length <= 253));
    const object = rule(paths);
    assert.ok(JSON.stringify(object).length > 10_000, "about the size of the reported rule");
    const w = await webhook(object, 2);
    assert.equal(w.decision.allowed, false);
    assert.match(!w.decision.allowed ? w.decision.message : "", /125 segments: may have at most 10/);
    const c = await controller(object, 2);
    console.log(
      `125 segments: admission ${w.atAdmission}, webhook per minute ${w.perMinute.join(" ")}, controller ${c.perMinute.join(" ")}`,
    );
    assert.equal(w.atAdmission, 0);
    assert.deepEqual(w.perMinute, [0, 0]);
    assert.deepEqual(c.perMinute, [0, 0]);
  });

  for (const ownParent of [false, true]) {
    const shape = ownParent ? "each under its own missing parent" : "all under one missing parent";
    it(`a rule of 32 paths at the cap (10 segments), ${shape}, costs at most 32 × 9 reads`, async () => {
      const object = rule(pathsUnderMissing(P, D, ownParent));
      const w = await webhook(object);
      assert.equal(w.decision.allowed, true, "a missing provider only warns");
      const c = await controller(object);
      console.log(
        `${D} segments, ${shape}: admission ${w.atAdmission}, webhook per minute ${w.perMinute.join(" ")}, ` +
          `controller per minute ${c.perMinute.join(" ")} (bound ${BOUND})`,
      );
      assert.ok(w.atAdmission > 0 && w.atAdmission <= BOUND, `admission: ${w.atAdmission}`);
      for (const n of [...w.perMinute, ...c.perMinute]) assert.ok(n > 0 && n <= BOUND, `per minute: ${n}`);
      if (ownParent) assert.equal(w.atAdmission, BOUND, "the worst case reaches the bound");
    });
  }

  it("while every read answers 403 (transient), at most 4 walks in the first minute, then one a minute", async () => {
    const object = rule(pathsUnderMissing(P, D, true));
    const denied = (): CountingKcp => {
      const kcp = new CountingKcp();
      kcp.forbidden.add("root");
      return kcp;
    };
    const w = await webhook(object, 4, denied());
    const c = await controller(object, 4, denied());
    console.log(
      `403 everywhere: admission ${w.atAdmission}, webhook per minute ${w.perMinute.join(" ")}, controller ${c.perMinute.join(" ")}`,
    );
    assert.ok(w.atAdmission <= BOUND);
    for (const [first, counts] of [
      [w.atAdmission, w.perMinute],
      [0, c.perMinute],
    ] as const) {
      assert.ok(first + counts[0]! <= 4 * BOUND, `first minute: ${counts.join(", ")}`);
      for (const n of counts.slice(1)) assert.ok(n <= BOUND, `later minutes: ${counts.join(", ")}`);
    }
  });
});
