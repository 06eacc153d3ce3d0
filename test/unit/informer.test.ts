// The informer against a local API-server double: list, watch, a watch that expires (410) and the re-list that must
// not lose the change made while no watch was open; objects keyed by logical cluster so same names never collide.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { Informer, objectKey, type EndpointStore, type KubeObject } from "../../src/kcp/informer.ts";
import { realClock, type Clock } from "../../src/util/clock.ts";
import { RestClient } from "../../src/kcp/rest.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { silentLogger } from "../../src/observability/logger.ts";

interface Thing extends KubeObject {
  spec?: { v: number };
}

const thing = (cluster: string, name: string, rv: number, v = 0): Thing => ({
  metadata: { name, resourceVersion: String(rv), annotations: { "kcp.io/cluster": cluster } },
  spec: { v },
});

/** A server whose objects the test edits; watches either stream events or answer 410 as the test decides. */
function apiDouble() {
  const state = { rv: 10, items: new Map<string, Thing>(), lists: 0, watches: 0 };
  let onWatch: (res: http.ServerResponse, rv: number) => void = () => undefined;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.searchParams.get("watch") === "true") {
      state.watches++;
      res.writeHead(200, { "content-type": "application/json" });
      onWatch(res, Number(url.searchParams.get("resourceVersion")));
      return;
    }
    state.lists++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ metadata: { resourceVersion: String(state.rv) }, items: [...state.items.values()] }));
  });
  return {
    state,
    server,
    setWatch: (fn: typeof onWatch) => (onWatch = fn),
    put: (t: Thing) => {
      state.rv++;
      t.metadata.resourceVersion = String(state.rv);
      state.items.set(objectKey(t), t);
      return t;
    },
  };
}

const api = apiDouble();
await new Promise<void>((r) => api.server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
const client = new RestClient(base, { headers: async () => ({}) });
after(() => {
  client.close();
  api.server.closeAllConnections();
  api.server.close();
});

test("objectKey separates same-named objects of different logical clusters", () => {
  assert.notEqual(objectKey(thing("a", "x", 1)), objectKey(thing("b", "x", 1)));
});

test("lists, follows a watch, and re-lists after a 410 without losing a change made in between", async () => {
  api.put(thing("c1", "a", 0, 1));
  api.put(thing("c2", "a", 0, 1)); // same name, other workspace
  const pending: http.ServerResponse[] = [];
  api.setWatch((res) => pending.push(res));
  let changes = 0;
  const informer = new Informer<Thing>({
    client,
    path: "/things",
    logger: silentLogger(),
    onChange: () => changes++,
  });
  informer.setEndpoints([base]);
  try {
    await waitFor("first list", async () => informer.hasSynced() || undefined);
    assert.equal(informer.list().length, 2);
    await waitFor("a watch", async () => pending.length > 0 || undefined);

    // A MODIFIED event through the open watch.
    const modified = api.put(thing("c1", "a", 0, 2));
    pending[0]?.write(JSON.stringify({ type: "MODIFIED", object: modified }) + "\n");
    await waitFor(
      "the event",
      async () =>
        informer.list().some((t) => t.metadata.annotations?.["kcp.io/cluster"] === "c1" && t.spec?.v === 2) ||
        undefined,
    );

    // The watch expires; meanwhile an object is added that no event will ever report.
    const listsBefore = api.state.lists;
    api.put(thing("c3", "b", 0, 7));
    pending[0]?.end(
      JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, message: "too old" } }) + "\n",
    );
    await waitFor("the re-list", async () => (api.state.lists > listsBefore ? true : undefined));
    await waitFor(
      "the object added during the gap",
      async () => informer.list().some((t) => t.metadata.name === "b") || undefined,
    );
    assert.equal(informer.list().length, 3);
    assert.ok(changes >= 3, `onChange called for list, event and re-list (${changes})`);
  } finally {
    informer.stop();
    for (const res of pending) res.end();
  }
});

test("dropping an endpoint forgets its objects", async () => {
  api.setWatch(() => undefined);
  const informer = new Informer<Thing>({ client, path: "/things", logger: silentLogger(), onChange: () => undefined });
  informer.setEndpoints([base]);
  try {
    await waitFor("first list", async () => informer.hasSynced() || undefined);
    assert.ok(informer.list().length > 0);
    informer.setEndpoints([]);
    assert.deepEqual(informer.list(), []);
    assert.equal(informer.hasSynced(), true);
  } finally {
    informer.stop();
  }
});

test("retires a store once nothing reads it: replaced by a relist's, or its endpoint dropped (the index ceiling)", async () => {
  const pending: http.ServerResponse[] = [];
  api.setWatch((res) => pending.push(res));
  const stores: { retired: number }[] = [];
  const newStore = (): EndpointStore<Thing> & { retired: number } => {
    const items = new Map<string, Thing>();
    const store = {
      retired: 0,
      set: (k: string, o: Thing) => void items.set(k, o),
      delete: (k: string) => void items.delete(k),
      values: () => items.values(),
      get size() {
        return items.size;
      },
      retire: () => void store.retired++,
    };
    stores.push(store);
    return store;
  };
  const informer = new Informer<Thing>({
    client,
    path: "/things",
    logger: silentLogger(),
    onChange: () => undefined,
    newStore,
  });
  informer.setEndpoints([base]);
  try {
    await waitFor("a watch", async () => pending.length > 0 || undefined);
    assert.deepEqual(
      stores.map((s) => s.retired),
      [1, 0],
      "the constructor's empty store is replaced by the first list's",
    );
    pending[0]?.end(
      JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, message: "too old" } }) + "\n",
    );
    await waitFor(
      "the re-list's store in use",
      async () => (stores.length === 3 && stores[1]!.retired === 1) || undefined,
    );
    informer.setEndpoints([]);
    assert.deepEqual(
      stores.map((s) => s.retired),
      [1, 1, 1],
    );
  } finally {
    informer.stop();
    for (const res of pending) res.end();
  }
});

/** A fake clock: timers fire only when the test advances it. */
function fakeTimers() {
  let now = 0;
  let nextId = 1;
  const pending = new Map<number, { at: number; ms: number; fn: () => void }>();
  const clock: Clock = {
    now: () => now,
    sleep: (ms, signal) => realClock.sleep(ms, signal), // only the watchdog is faked; a backoff takes real time
    after: (ms, fn) => {
      const id = nextId++;
      pending.set(id, { at: now + ms, ms, fn });
      return { cancel: () => void pending.delete(id) };
    },
  };
  return {
    clock,
    armed: () => [...pending.values()].map((t) => t.ms),
    set: () => nextId - 1,
    advance(ms: number): void {
      now += ms;
      for (const [id, t] of [...pending].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at > now) continue;
        pending.delete(id);
        t.fn();
      }
    },
  };
}

test("the watchdog restarts a watch silent past its timeout plus the margin, reset by every bookmark", async () => {
  const open: { res: http.ServerResponse; rv: number }[] = [];
  api.setWatch((res, rv) => open.push({ res, rv }));
  const clock = fakeTimers();
  const stalled: string[] = [];
  const informer = new Informer<Thing>({
    client,
    path: "/things",
    logger: silentLogger(),
    onChange: () => undefined,
    watchTimeoutSeconds: 60,
    watchdogMarginSeconds: 10,
    clock: clock.clock,
    onWatchStalled: (endpoint) => stalled.push(endpoint),
  });
  informer.setEndpoints([base]);
  try {
    await waitFor("a watch", async () => open.length > 0 || undefined);
    const listsBefore = api.state.lists;
    assert.deepEqual(clock.armed(), [70_000], "one watchdog, at timeout + margin");

    clock.advance(69_999);
    assert.deepEqual(stalled, [], "silent, but not yet past the deadline");

    // A bookmark resets the watchdog and moves the resume point.
    const armedBefore = clock.set();
    open[0]?.res.write(JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "4242" } } }) + "\n");
    await waitFor("the watchdog re-armed", async () => clock.set() > armedBefore || undefined);
    clock.advance(69_999);
    assert.deepEqual(stalled, [], "the bookmark moved the deadline");

    clock.advance(1);
    assert.deepEqual(stalled, [base]);
    await waitFor("a second watch", async () => open.length > 1 || undefined);
    assert.equal(open[1]?.rv, 4242, "reopened from the bookmark's resourceVersion");
    assert.equal(api.state.lists, listsBefore, "a restart reopens the watch; no relist needed");
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(clock.armed(), [70_000], "the new watch has its own watchdog, the old one is gone");
  } finally {
    informer.stop();
    for (const w of open) w.res.end();
  }
});
