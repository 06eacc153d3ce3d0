// `--lookup=auto` where a dependent type's index is forbidden (no provider consent): the webhook probes by itself, with
// one LIST limit=1, whether live lookups may read the type, so the index report (and the rule's DependentsIndexed
// condition) says live or none before any DELETE, and again on a bounded schedule. On the fake clock, against a
// front-proxy stand-in that counts its requests: the interval bound, single-flight, no storm, lookups winning races.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { Registry } from "prom-client";
import { type IndexReport, type IndexedTypeState } from "../../src/api/index-report.ts";
import { parseRule } from "../../src/api/rule.ts";
import { dependentsIndexed } from "../../src/controller/index-status.ts";
import { toApiError } from "../../src/kcp/answers.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import { unavailable } from "../../src/webhook/deletion/finder.ts";
import type { HybridDependentFinder } from "../../src/webhook/deletion/hybrid.ts";
import { finderFor, proberFor } from "../../src/webhook/deletion/hybrid.ts";
import type { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { IndexReporter } from "../../src/webhook/deletion/index/report.ts";
import { autoLookups } from "../../src/webhook/deletion/index/start.ts";
import type { TypeHealth } from "../../src/webhook/deletion/index/watches.ts";
import { PROBE_CONCURRENCY, PROBE_INTERVAL_MS, PROBE_RETRY_MS } from "../../src/webhook/deletion/probe.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { fakeConfigMap } from "../support/fake-configmap.ts";
import { ruleObject, vmLookup } from "./helpers-rules.ts";

const silent = pino({ level: "silent" });
const VM = "compute/compute.example.io/compute.example.io/v1/virtualmachines";
const FORBIDDEN = { state: "failing", reason: "Forbidden" } as const;
const IN_PROVIDER = "/clusters/compute/apis/compute.example.io/v1/virtualmachines";

type Mode = "allow" | "absent" | "deny" | "down";

/** The front-proxy as the webhook's identity sees it: `mode` says what the per-shard grant allows; counts requests. */
function frontProxy(mode: Mode = "allow") {
  const p = {
    mode,
    probes: [] as string[],
    lists: 0,
    inFlight: 0,
    maxInFlight: 0,
    /** While set, probes wait for it: a probe held in flight. */
    gate: undefined as Promise<void> | undefined,
  };
  const answer = (method: string, path: string) => {
    const status = { allow: 200, absent: 404, deny: 403, down: 503 }[p.mode];
    if (status !== 200) throw toApiError(method, path, status, "{}");
    return { items: [], metadata: {} };
  };
  const client = {
    request: async (method: string, path: string, opts?: { query?: Record<string, unknown> }) => {
      p.probes.push(`${method} ${path}?limit=${String(opts?.query?.["limit"])}`);
      p.maxInFlight = Math.max(p.maxInFlight, ++p.inFlight);
      try {
        await p.gate;
        return answer(method, path);
      } finally {
        p.inFlight--;
      }
    },
    listPages: async (path: string, onPage: (page: unknown) => boolean) => {
      p.lists++;
      await Promise.resolve();
      onPage(answer("GET", path));
    },
  } as unknown as RestClient;
  return { p, client };
}

/** An index whose watches of `types` (default: the VM type) fail with kcp's 403: the provider never consented. */
function forbiddenIndex(types: string[] = [VM]): DependentsIndex {
  const health: TypeHealth[] = types.map((type) => ({ type, state: "failing", errors: ["slices: 403 Forbidden"] }));
  return {
    find: () => Promise.resolve(unavailable("failing", "the index of x is not readable", "403")),
    health: () => health,
  } as unknown as DependentsIndex;
}

/** The webhook of --lookup=auto as index/start.ts wires it: the lookup book, its prober, the reporter, the finder. */
function webhook(mode: Mode = "allow", index = forbiddenIndex()) {
  const clock = new FakeClock();
  const proxy = frontProxy(mode);
  const cm = fakeConfigMap();
  const auto = autoLookups(
    proxy.client,
    () => index.health(),
    silent,
    () => reporter.changed(),
    clock,
  );
  const reporter = new IndexReporter({
    client: cm.client,
    health: () => index.health(),
    logger: silent,
    clock,
    replica: "a",
    ...auto.report,
  });
  const finder = finderFor("auto", index, proxy.client, silent, new Registry(), auto.book, clock);
  reporter.start();
  return { clock, proxy: proxy.p, report: cm.report, finder: finder as HybridDependentFinder, reporter };
}

const rule = parseRule(ruleObject("compute", "vm", { resource: "virtualmachines" }, [{ resource: "vpcs" }], 1))!;
/** The rule's DependentsIndexed verdict, as the controller writes it from the report's VM type. */
const verdict = (r: IndexReport | undefined) =>
  dependentsIndexed(rule, r?.[VM] ?? { state: "missing" }, undefined, { now: "2026-01-01T00:00:00Z", graceMs: 0 });

describe("the probe of a forbidden type's live read access", () => {
  it("per-shard grant held: the first report says live, before any DELETE; the rule reads LiveLookup", async () => {
    const w = webhook("allow");
    await w.clock.advance(2_000);
    assert.deepEqual(w.report(), { [VM]: { ...FORBIDDEN, lookup: "live" } });
    assert.deepEqual(w.proxy.probes, [`GET ${IN_PROVIDER}?limit=1`], "one LIST limit=1 in the provider's workspace");
    assert.equal(w.proxy.lists, 0, "no lookup happened");
    assert.deepEqual([verdict(w.report()).status, verdict(w.report()).reason], ["True", "LiveLookup"]);
    await w.reporter.stop();
  });

  it("a 404 (the provider's workspace does not serve the type) was authorized first: live", async () => {
    const w = webhook("absent");
    await w.clock.advance(2_000);
    assert.equal(w.report()?.[VM]?.lookup, "live");
    await w.reporter.stop();
  });

  it("neither consent nor grant: the probe's 403 says none; the rule reads IndexForbidden naming both ways in", async () => {
    const w = webhook("deny");
    await w.clock.advance(2_000);
    assert.deepEqual(w.report(), { [VM]: { ...FORBIDDEN, lookup: "none" } });
    const v = verdict(w.report());
    assert.deepEqual([v.status, v.reason], ["False", "IndexForbidden"]);
    assert.match(v.message, /provider-index\.yaml.*nor does it hold the per-shard read grant/);
    await w.reporter.stop();
  });

  it("grant removed, then added back: each shows at the first probe past the interval, none sooner", async () => {
    const w = webhook("allow");
    await w.clock.advance(2_000);
    w.proxy.mode = "deny";
    await w.clock.advance(PROBE_INTERVAL_MS - 60_000); // reports every minute meanwhile: no probe among them
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [1, "live"]);
    await w.clock.advance(60_000 + 2_000);
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [2, "none"]);
    w.proxy.mode = "allow";
    await w.clock.advance(PROBE_INTERVAL_MS + 60_000);
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [3, "live"]);
    await w.reporter.stop();
  });

  it("a lookup at a DELETE updates the source at once, postpones the probe, and moves it to its consumer", async () => {
    const w = webhook("allow");
    await w.clock.advance(2_000);
    w.proxy.mode = "deny";
    await w.clock.advance(PROBE_INTERVAL_MS - 30_000);
    const a = await w.finder.find(vmLookup(), 10);
    assert.ok(!a.ok && a.reason === "no-read-access", JSON.stringify(a));
    await w.clock.advance(2_000);
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [1, "none"]);
    await w.clock.advance(PROBE_INTERVAL_MS - 60_000);
    assert.equal(w.proxy.probes.length, 1, "the lookup told the source: the next probe is an interval after it");
    await w.clock.advance(120_000);
    assert.deepEqual(w.proxy.probes.slice(1), [
      `GET /clusters/consumer1/apis/compute.example.io/v1/virtualmachines?limit=1`,
    ]);
    await w.reporter.stop();
  });

  it("a probe that fails otherwise (503) leaves the source unknown and is tried again after the retry delay", async () => {
    const w = webhook("down");
    await w.clock.advance(2_000);
    assert.deepEqual(w.report(), { [VM]: FORBIDDEN });
    w.proxy.mode = "allow";
    await w.clock.advance(PROBE_RETRY_MS - 5_000);
    w.reporter.changed();
    await w.clock.advance(2_000);
    assert.equal(w.proxy.probes.length, 1, "not before the retry delay");
    await w.clock.advance(60_000);
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [2, "live"]);
    await w.reporter.stop();
  });

  it("a consent revoked after lookups the index answered: probed at once, not an interval later", async () => {
    const index = forbiddenIndex();
    const health = index.health();
    health[0] = { type: VM, state: "ready", errors: [] };
    (index as { find: unknown }).find = () => Promise.resolve({ ok: true, dependents: [], complete: true });
    const w = webhook("allow", index);
    await w.clock.advance(2_000);
    await w.finder.find(vmLookup(), 10);
    assert.deepEqual([w.proxy.probes.length, w.finder.lastSources().get(VM)], [0, "index"]);
    health[0] = { type: VM, state: "failing", errors: ["slices: 403 Forbidden"] };
    w.reporter.changed();
    await w.clock.advance(2_000);
    assert.deepEqual([w.proxy.probes.length, w.report()?.[VM]?.lookup], [1, "live"]);
    await w.reporter.stop();
  });

  it("never probes a type whose index is ready or failing for another reason", async () => {
    const index = forbiddenIndex();
    index.health()[0] = { type: VM, state: "failing", errors: ["slices: 500"] };
    const w = webhook("allow", index);
    await w.clock.advance(PROBE_INTERVAL_MS * 2);
    assert.equal(w.proxy.probes.length, 0);
    await w.reporter.stop();
  });
});

describe("the probe's cost", () => {
  /** The hybrid finder and its prober over `types` forbidden types, without the reporter: run() by hand. */
  function probing(types: string[], mode: Mode = "allow") {
    const clock = new FakeClock();
    const proxy = frontProxy(mode);
    const index = forbiddenIndex(types);
    const h = finderFor("auto", index, proxy.client, silent, new Registry(), undefined, clock) as HybridDependentFinder;
    const report = (): IndexReport =>
      Object.fromEntries(index.health().map((t): [string, IndexedTypeState] => [t.type, FORBIDDEN]));
    return { clock, proxy: proxy.p, h, prober: proberFor(h.book, report, proxy.client, silent) };
  }
  const types = (n: number) => Array.from({ length: n }, (_, i) => `compute/compute.example.io/g/v1/r${i}`);

  it("single-flight: runs asked for while a probe is in flight share it, and find nothing more due", async () => {
    const { clock, proxy, h, prober } = probing([VM]);
    let release = (): void => undefined;
    proxy.gate = new Promise((r) => (release = r));
    const runs = [prober.run(), prober.run(), prober.run()];
    await clock.settle();
    assert.deepEqual([proxy.probes.length, proxy.inFlight], [1, 1]);
    release();
    await Promise.all(runs);
    assert.deepEqual([proxy.probes.length, h.lastSources().get(VM)], [1, "live"]);
  });

  it("many failing types: each probed once per interval, at most PROBE_CONCURRENCY at a time", async () => {
    const { clock, proxy, h, prober } = probing(types(10));
    await prober.run();
    assert.equal(proxy.probes.length, 10);
    assert.equal(new Set(proxy.probes).size, 10, "one probe per type");
    assert.equal(proxy.maxInFlight, PROBE_CONCURRENCY);
    await clock.advance(PROBE_INTERVAL_MS - 1);
    await prober.run();
    await prober.run();
    assert.equal(proxy.probes.length, 10, "none again within the interval, however often asked");
    await clock.advance(1);
    await prober.run();
    assert.equal(proxy.probes.length, 20);
    assert.equal([...h.lastSources().values()].filter((s) => s === "live").length, 10);
  });

  it("a lookup that began while a probe was in flight knows better: the probe's answer is dropped", async () => {
    const { clock, proxy, h, prober } = probing([VM]);
    let release = (): void => undefined;
    proxy.gate = new Promise((r) => (release = r));
    const run = prober.run();
    await clock.settle();
    await clock.advance(1);
    proxy.mode = "deny"; // the grant goes: the lookup sees it
    await h.find(vmLookup(), 10);
    assert.equal(h.lastSources().get(VM), "none");
    proxy.mode = "allow"; // the probe's answer, from before
    release();
    await run;
    assert.equal(h.lastSources().get(VM), "none");
  });
});
