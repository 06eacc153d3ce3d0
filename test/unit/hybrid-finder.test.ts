// The finder of --lookup=auto on stand-ins for the index and the live lookup: which of the two answers each lookup,
// and what is left when neither may read. An installation coming from the Go original (no index consent, the
// per-shard grant) must be answered live; one following getting-started (consent, no grant) from the index; one with
// neither must get the documented "no-read-access" answer, never a found-nothing.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { Registry } from "prom-client";
import { dependentTypeKey, type IndexedTypeState } from "../../src/api/index-report.ts";
import { ApiError } from "../../src/kcp/answers.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import type { Lookup } from "../../src/webhook/admission.ts";
import {
  found,
  unavailable,
  type DependentFinder,
  type FinderAnswer,
  type UnavailableReason,
} from "../../src/webhook/deletion/finder.ts";
import { finderFor, HybridDependentFinder } from "../../src/webhook/deletion/hybrid.ts";
import type { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { LiveDependentFinder } from "../../src/webhook/deletion/live.ts";
import { VM_DEPENDENT, vmLookup } from "./helpers-rules.ts";

const KEY = dependentTypeKey(VM_DEPENDENT);
const silent = pino({ level: "silent" });
const forbidden = (): ApiError => new ApiError("GET", "/clusters/consumer1/apis/x", 403, "Forbidden", "no");
const VM = { name: "my-vm", namespace: "default", field: ".spec.vpcRef.name" };

/** A finder that answers (or throws) what the test says, and counts its calls. */
function stub(answer: () => FinderAnswer) {
  const f = { calls: 0, find: (): Promise<FinderAnswer> => (f.calls++, Promise.resolve().then(answer)) };
  return f;
}

const indexUnavailable = (reason: UnavailableReason) =>
  stub(() => unavailable(reason, `the index of virtualmachines.compute.example.io is ${reason}`, `${KEY}: ${reason}`));

function hybrid(index: DependentFinder, live: DependentFinder, state?: IndexedTypeState) {
  return new HybridDependentFinder({ index, live, indexState: (k) => (k === KEY ? state : undefined), logger: silent });
}

const NO_CONSENT: IndexedTypeState = { state: "failing", reason: "Forbidden" };

function assertFound(a: FinderAnswer, names: string[]): void {
  assert.ok(a.ok, `expected dependents, got ${JSON.stringify(a)}`);
  assert.deepEqual(
    a.dependents.map((d) => d.name),
    names,
  );
}

describe("HybridDependentFinder (--lookup=auto)", () => {
  it("answers from the index when the provider consented, and never lists live", async () => {
    const index = stub(() => found([VM], true));
    const live = stub(() => {
      throw new Error("must not be called");
    });
    const h = hybrid(index, live, { state: "ready" });
    assertFound(await h.find(vmLookup(), 10), ["my-vm"]);
    assert.equal(live.calls, 0);
    assert.equal(h.lastSources().get(KEY), "index");
  });

  it("lists live when the index is forbidden (no consent) and the webhook holds the per-shard grant", async () => {
    const h = hybrid(
      indexUnavailable("failing"),
      stub(() => found([VM], true)),
      NO_CONSENT,
    );
    assertFound(await h.find(vmLookup(), 10), ["my-vm"]);
    assert.equal(h.lastSources().get(KEY), "live");
  });

  it("answers 'no-read-access' when the index is forbidden and the live list is forbidden too", async () => {
    // The index's last good view goes along: decision.ts decides from it where such an answer may refuse.
    const seen = { everSynced: true, consumerSeen: false };
    const h = hybrid(
      stub(() => ({ ...unavailable("failing", "the index of x is not readable", `${KEY}: 403`), seen })),
      stub(() => {
        throw forbidden();
      }),
      NO_CONSENT,
    );
    const a = await h.find(vmLookup(), 10);
    assert.equal(a.ok, false);
    if (a.ok) return;
    assert.equal(a.reason, "no-read-access");
    // The deleter is told no type: the dependent type is another provider's. The log gets it.
    assert.equal(
      a.message,
      "the webhook may read these dependents neither through their provider's index consent nor with the per-shard read grant",
    );
    assert.ok(!a.message.includes("virtualmachines") && !a.message.includes("compute"), a.message);
    assert.ok(a.detail.startsWith(`${KEY}: 403; live list: `) && a.detail.includes("403 Forbidden"), a.detail);
    assert.deepEqual(a.seen, seen);
    assert.equal(h.lastSources().get(KEY), "none");
  });

  it("throws a live failure other than 403 when the index is forbidden (fail closed, as live mode)", async () => {
    const h = hybrid(
      indexUnavailable("failing"),
      stub(() => {
        throw new Error("connect ECONNREFUSED");
      }),
      NO_CONSENT,
    );
    await assert.rejects(h.find(vmLookup(), 10), /ECONNREFUSED/);
  });

  for (const reason of ["starting", "syncing", "failing"] as const) {
    it(`while the index is ${reason} (not for want of consent): live if allowed, else the index's own answer`, async () => {
      const state: IndexedTypeState | undefined =
        reason === "failing"
          ? { state: "failing", reason: "Error" }
          : reason === "syncing"
            ? { state: reason }
            : undefined;
      assertFound(
        await hybrid(
          indexUnavailable(reason),
          stub(() => found([VM], true)),
          state,
        ).find(vmLookup(), 10),
        ["my-vm"],
      );
      const refused = stub(() => {
        throw forbidden();
      });
      const a = await hybrid(indexUnavailable(reason), refused, state).find(vmLookup(), 10);
      assert.equal(refused.calls, 1);
      assert.equal(a.ok, false);
      if (!a.ok) assert.equal(a.reason, reason);
    });
  }
});

describe("HybridDependentFinder and the index budget", () => {
  it("answers 'unreadable' as the index gave it, without a live list, even where live reads are allowed", async () => {
    for (const state of [NO_CONSENT, undefined]) {
      const live = stub(() => found([VM], true));
      const a = await hybrid(indexUnavailable("unreadable"), live, state).find(vmLookup(), 10);
      assert.equal(live.calls, 0, "a live list would read the over-budget dependents on every delete");
      assert.ok(!a.ok && a.reason === "unreadable", JSON.stringify(a));
    }
  });
});

/** A kcp front-proxy stand-in for the live finder: lists `items`, or refuses with `error`. */
function base(o: { items?: unknown[]; error?: Error }): RestClient {
  return {
    listPages: (_path: string, onPage: (p: { items: unknown[]; metadata: object }) => boolean) => {
      if (o.error) return Promise.reject(o.error);
      onPage({ items: o.items ?? [], metadata: {} });
      return Promise.resolve();
    },
  } as unknown as RestClient;
}

/** An index stand-in: forbidden (its watch's errors name a 403, as kcp's refusal reads) and unable to answer. */
function forbiddenIndex(): DependentsIndex {
  return {
    find: () => Promise.resolve(unavailable("failing", "the index of x is not readable", "403")),
    health: () => [{ type: KEY, state: "failing", errors: ["slices: 403 Forbidden"] }],
  } as unknown as DependentsIndex;
}

const vmOf = (l: Lookup) => ({
  metadata: { name: "my-vm", namespace: "default" },
  spec: { vpcRef: { name: l.name } },
});

describe("finderFor: the finder of each --lookup mode", () => {
  it("index and live modes get their own finder; auto wraps both", () => {
    const index = forbiddenIndex();
    assert.equal(finderFor("index", index, base({}), silent, new Registry()), index);
    assert.ok(finderFor("live", undefined, base({}), silent, new Registry()) instanceof LiveDependentFinder);
    assert.ok(finderFor("auto", index, base({}), silent, new Registry()) instanceof HybridDependentFinder);
  });

  it("auto reads the index's 403 from its health and counts the types by what checked them (metric)", async () => {
    const registry = new Registry();
    const granted = finderFor("auto", forbiddenIndex(), base({ items: [vmOf(vmLookup())] }), silent, registry);
    assertFound(await granted.find(vmLookup(), 10), ["my-vm"]);
    const metrics = await registry.metrics();
    assert.match(metrics, /^dependency_webhook_lookup_sources\{source="live"\} 1$/m);
    assert.match(metrics, /^dependency_webhook_lookup_sources\{source="index"\} 0$/m);
    assert.match(metrics, /^dependency_webhook_lookup_sources\{source="none"\} 0$/m);
    assert.ok(!metrics.includes(KEY), "no series names a dependent type");

    const neither = finderFor("auto", forbiddenIndex(), base({ error: forbidden() }), silent, new Registry());
    const a = await neither.find(vmLookup(), 10);
    assert.ok(!a.ok && a.reason === "no-read-access", JSON.stringify(a));
  });
});
