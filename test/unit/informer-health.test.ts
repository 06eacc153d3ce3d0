// Informer.failing(): an endpoint is failing while its list or watch ends in errors, and while a watch the watchdog
// dropped (silent past its deadline: a stopped or partitioned shard) has no answering replacement. A normal watch
// end is no failure. Against a local API-server double; the watchdog runs on fake timers.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { Informer, type KubeObject } from "../../src/kcp/informer.ts";
import { RestClient } from "../../src/kcp/rest.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { realClock, type Clock } from "../../src/util/clock.ts";
import { waitFor } from "../../tools/kcp/process.ts";

const state = { failLists: false, lists: 0, watches: [] as http.ServerResponse[] };
const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  if (url.searchParams.get("watch") === "true") {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    state.watches.push(res);
    return;
  }
  state.lists++;
  if (state.failLists) {
    res.writeHead(500, { "content-type": "application/json" });
    res.end(JSON.stringify({ kind: "Status", code: 500, message: "etcd is sad" }));
    return;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ metadata: { resourceVersion: "7" }, items: [] }));
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const client = new RestClient(base, { headers: async () => ({}) });
after(() => {
  client.close();
  server.closeAllConnections();
  server.close();
});

/** Watchdog timers that fire only when the test says so. */
function fakeTimers() {
  const pending = new Map<number, () => void>();
  let id = 0;
  const clock: Clock = {
    now: () => 0,
    sleep: (ms, signal) => realClock.sleep(ms, signal), // only the watchdog is faked; a backoff takes real time
    after: (_ms, fn) => {
      const key = ++id;
      pending.set(key, fn);
      return { cancel: () => void pending.delete(key) };
    },
  };
  return {
    clock,
    fireAll(): void {
      for (const [k, fn] of [...pending]) {
        pending.delete(k);
        fn();
      }
    },
  };
}

function informer(clock?: Clock, onChange: () => void = () => undefined) {
  return new Informer<KubeObject>({
    client,
    path: "/things",
    logger: silentLogger(),
    onChange,
    ...(clock ? { clock } : {}),
  });
}

test("a failing list shows in failing() with its error, and clears once a list works again", async () => {
  state.failLists = true;
  state.watches = [];
  const inf = informer();
  inf.setEndpoints([base]);
  try {
    const f = await waitFor("the endpoint failing", async () => inf.failing()[0]);
    assert.equal(f.endpoint, base);
    assert.match(f.error, /etcd is sad|500/);
    state.failLists = false;
    await waitFor("the endpoint healthy again", async () => inf.failing().length === 0 || undefined);
    assert.equal(inf.hasSynced(), true);
  } finally {
    inf.stop();
    for (const w of state.watches) w.end();
  }
});

test("a watch silent past its deadline fails the endpoint until the reopened watch is accepted", async () => {
  state.failLists = false;
  state.watches = [];
  const clock = fakeTimers();
  const inf = informer(clock.clock);
  inf.setEndpoints([base]);
  try {
    await waitFor("a watch", async () => state.watches.length > 0 || undefined);
    assert.deepEqual(inf.failing(), []);
    clock.fireAll(); // the watchdog: the shard said nothing past the watch's timeout
    assert.match(inf.failing()[0]?.error ?? "", /watch silent/);
    await waitFor("the reopened watch", async () => state.watches.length > 1 || undefined);
    // The double answers 200 at once: accepted is answered, no event needed (a shard back from SIGSTOP sends its
    // first bookmark only shortly before the watch's timeout).
    await waitFor("its 200 clears it", async () => inf.failing().length === 0 || undefined);

    // The server ending a watch at its timeout is no failure.
    state.watches[1]?.end();
    await waitFor("the next watch", async () => state.watches.length > 2 || undefined);
    assert.deepEqual(inf.failing(), []);
  } finally {
    inf.stop();
    for (const w of state.watches) w.end();
  }
});

test("listeners hear when an endpoint turns failing, once per run of failures, not at every retry", async () => {
  state.failLists = true;
  state.watches = [];
  const heard: boolean[] = []; // at each change: did the endpoint read as failing?
  const inf: Informer<KubeObject> = informer(undefined, () => heard.push(inf.failing().length > 0));
  inf.setEndpoints([base]);
  try {
    await waitFor("a change that reads as failing", async () => heard.includes(true) || undefined);
    const before = state.lists;
    await waitFor("two more failed lists (retries)", async () => state.lists >= before + 2 || undefined);
    assert.equal(heard.filter((failing) => failing).length, 1);
  } finally {
    inf.setEndpoints([]);
    state.failLists = false;
  }
});
