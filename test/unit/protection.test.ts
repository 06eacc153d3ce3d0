// The decision of what protects a dependent type (src/webhook/deletion/protection.ts), row by row of its table, and
// the two steps a lookup takes from it. The finder, the prober and the index report all read this one decision.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  afterIndexMiss,
  afterLiveFailure,
  PROBE_INTERVAL_MS,
  protectionOf,
  reportedLookups,
  type IndexState,
  type Learned,
  type LookupMode,
} from "../../src/webhook/deletion/protection.ts";

const READY: IndexState = { state: "ready" };
const SYNCING: IndexState = { state: "syncing" };
const FORBIDDEN: IndexState = { state: "failing", reason: "Forbidden" };
const ERROR: IndexState = { state: "failing", reason: "Error" };
const NOW = 10 * PROBE_INTERVAL_MS;
const fresh = (source: Learned["source"]): Learned => ({ source, at: NOW - 1 });
const old = (source: Learned["source"]): Learned => ({ source, at: NOW - PROBE_INTERVAL_MS });

type Row = [LookupMode, IndexState | undefined, Learned | undefined, string, string, string | undefined, boolean];

describe("protectionOf: what protects a dependent type", () => {
  // mode, index state, learned → by, why, reported, probe
  const rows: Row[] = [
    ["live", undefined, undefined, "live", "live-mode", undefined, false],
    ["live", FORBIDDEN, fresh("none"), "live", "live-mode", undefined, false],
    ["index", READY, undefined, "index", "indexed", undefined, false],
    ["index", SYNCING, undefined, "none", "index-syncing", undefined, false],
    ["index", undefined, undefined, "none", "index-syncing", undefined, false],
    ["index", FORBIDDEN, fresh("live"), "none", "no-consent", undefined, false],
    ["index", ERROR, undefined, "none", "index-failing", undefined, false],
    ["auto", READY, undefined, "index", "indexed", undefined, false],
    ["auto", READY, fresh("index"), "index", "indexed", "index", false],
    ["auto", SYNCING, fresh("live"), "live", "live-grant", "live", false],
    ["auto", ERROR, fresh("none"), "none", "no-read-access", "none", false],
    ["auto", ERROR, undefined, "none", "index-failing", undefined, false],
    ["auto", FORBIDDEN, undefined, "none", "not-probed", undefined, true],
    ["auto", FORBIDDEN, fresh("index"), "none", "not-probed", "index", true],
    ["auto", FORBIDDEN, fresh("live"), "live", "live-grant", "live", false],
    ["auto", FORBIDDEN, old("live"), "live", "live-grant", "live", true],
    ["auto", FORBIDDEN, fresh("none"), "none", "no-read-access", "none", false],
    ["auto", FORBIDDEN, old("none"), "none", "no-read-access", "none", true],
  ];
  for (const [mode, index, learned, by, why, reported, probe] of rows)
    it(`${mode}, index ${JSON.stringify(index)}, learned ${JSON.stringify(learned)}: ${by} (${why})`, () => {
      const p = protectionOf(mode, index, learned, NOW);
      assert.deepEqual([p.by, p.why, p.reported, p.probe], [by, why, reported, probe]);
    });
});

describe("a lookup's steps", () => {
  it("after the index could not answer: a live list in auto mode, unless a consumer is over its budget", () => {
    assert.equal(afterIndexMiss("auto", "failing"), "try-live");
    assert.equal(afterIndexMiss("auto", "syncing"), "try-live");
    assert.equal(afterIndexMiss("auto", "unreadable"), "stands");
    assert.equal(afterIndexMiss("index", "failing"), "stands");
  });

  it("after the live list failed: no read access only where the index is forbidden and live said 403", () => {
    assert.equal(afterLiveFailure(FORBIDDEN, true), "none");
    assert.equal(afterLiveFailure(FORBIDDEN, false), "throw");
    assert.equal(afterLiveFailure(SYNCING, true), "index");
    assert.equal(afterLiveFailure(ERROR, false), "index");
    assert.equal(afterLiveFailure(undefined, true), "index");
  });
});

describe("reportedLookups: the index report's lookup per type", () => {
  it("auto mode reports what each type's last lookup or probe found, for the types the index reports", () => {
    const learned = new Map([
      ["a", fresh("live")],
      ["b", fresh("none")],
      ["gone", fresh("live")],
    ]);
    const states = { a: FORBIDDEN, b: FORBIDDEN, c: READY };
    assert.deepEqual(
      [...reportedLookups("auto", states, (k) => learned.get(k), NOW)],
      [
        ["a", "live"],
        ["b", "none"],
      ],
    );
    assert.deepEqual([...reportedLookups("index", states, (k) => learned.get(k), NOW)], []);
  });
});
