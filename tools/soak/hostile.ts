// The hostile consumer's dependents: at seeded random moments, in its own workspace (tenants.ts) and namespace, VMs
// whose references are oversized strings (254 characters to 4 KiB, the first of each episode 64-512 KiB), then, in
// some episodes (always in the first), a Server naming thousands of distinct subnets (past the index's 1,000 names per
// object) and a burst of small VMs past the soak's per-workspace budget (tenants.ts: 100 dependents of a type). It
// probes its own deletes (dry runs) while they stand, deletes them all after 10-60 s, and records each episode with
// the types it overloaded: in index mode the server type (names cap) and the VM type (budget); in live mode none, since
// the live lookup keeps no index and has no budget (it lists and compares, and an oversized value names nothing).
import type { Consumer, SoakEnv } from "./env.ts";
import type { History, HostileEpisode } from "./history.ts";
import { request } from "./kube.ts";
import { KINDS, collection, type Kind } from "./kinds.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";
import { slowUploads } from "./slow-uploads.ts";
import { SOAK_INDEX_BUDGET } from "./tenants.ts";

export const HOSTILE_NS = "hostile";
const KIB = 1024;

export interface HostileOptions {
  wl: WorkloadOptions;
  hostile: Consumer;
  lookup: "index" | "live";
  everyMs: [number, number];
  holdMs: [number, number];
  episodes: HostileEpisode[];
  log: (line: string) => void;
}

/** The objects its probes dry-run delete: in its namespace, a cluster-scoped zone, and a VPC in `default`. */
const TARGETS: { k: Kind; ns: string; name: string }[] = [
  { k: KINDS.vpc, ns: HOSTILE_NS, name: "h-vpc" },
  { k: KINDS.subnet, ns: HOSTILE_NS, name: "h-subnet" },
  { k: KINDS.zone, ns: "", name: "h-zone" },
  { k: KINDS.vpc, ns: "default", name: "h-vpc" },
];

/** What the hostile consumer takes of the soak's options (soak.ts). */
export interface HostileSoakOptions {
  lookup: "index" | "live";
  hostileEveryMs: [number, number];
  hostileHoldMs: [number, number];
  log: (line: string) => void;
}

/** The hostile consumer's two workers, each on its own fork of the generator it is handed. */
export function startHostile(
  env: SoakEnv,
  o: HostileSoakOptions,
  history: History,
  w: WorkloadOptions,
  signal: AbortSignal,
): Promise<void>[] {
  const episodes = (history.hostile ??= []);
  const slow = w.rng.fork();
  return [
    hostileDependents({
      wl: { ...w, rng: w.rng.fork() },
      hostile: env.hostile,
      lookup: o.lookup,
      everyMs: o.hostileEveryMs,
      holdMs: o.hostileHoldMs,
      episodes,
      log: o.log,
    }),
    slowUploads({
      ports: env.webhookPorts,
      route: `/validate/${env.topo.clusters.network}`,
      rng: slow,
      signal,
      everyMs: o.hostileEveryMs,
      holdMs: o.hostileHoldMs,
      episodes,
      log: o.log,
    }),
  ];
}

export async function hostileDependents(h: HostileOptions): Promise<void> {
  const { rng, signal } = h.wl;
  await setUp(h);
  for (let n = 0; !signal.aborted; n++) {
    await sleep(rng.int(...h.everyMs), signal);
    if (signal.aborted) break;
    await episode(h, n, { names: n === 0 || rng.chance(0.5), budget: n === 0 || rng.chance(0.4) });
  }
}

function send(h: HostileOptions, kind: "create" | "delete-dry-run" | "delete-collection", k: Kind, ns: string) {
  const ws = `/clusters/${h.hostile.path}`;
  return (name: string, method: string, path: string, body?: unknown) =>
    h.wl.log.send(
      h.wl.conn,
      {
        worker: "hostile",
        kind,
        cluster: h.hostile.cluster,
        workspace: h.hostile.path,
        resource: k.resource,
        namespace: ns,
        name,
      },
      method,
      `${ws}${collection(k, ns)}${path}`,
      body === undefined ? {} : { body },
    );
}

async function setUp(h: HostileOptions): Promise<void> {
  await h.wl.log.send(
    h.wl.conn,
    {
      worker: "hostile",
      kind: "create-namespace",
      cluster: h.hostile.cluster,
      workspace: h.hostile.path,
      resource: "namespaces",
      namespace: "",
      name: HOSTILE_NS,
    },
    "POST",
    `/clusters/${h.hostile.path}/api/v1/namespaces`,
    { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: HOSTILE_NS } } },
  );
  for (const t of TARGETS) {
    const body = { apiVersion: t.k.apiVersion, kind: t.k.kind, metadata: { name: t.name }, spec: {} };
    await send(h, "create", t.k, t.ns)(t.name, "POST", "", body);
  }
}

const vm = (name: string, refs: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: KINDS.vm.apiVersion,
  kind: KINDS.vm.kind,
  metadata: { name, namespace: HOSTILE_NS },
  spec: { cpu: 1, ...refs },
});

/** One episode: create, hold (probing its own deletes), delete everything, record. */
async function episode(h: HostileOptions, n: number, plan: { names: boolean; budget: boolean }): Promise<void> {
  const { rng } = h.wl;
  const startAt = Date.now();
  const createVm = send(h, "create", KINDS.vm, HOSTILE_NS);
  const sizes = Array.from({ length: rng.int(3, 6) }, (_, i) =>
    i === 0 ? rng.int(64, 512) * KIB : rng.int(254, 4096),
  );
  const what = [`${sizes.length} VMs with references of ${Math.min(...sizes)}-${Math.max(...sizes)} characters`];
  await inBatches(sizes, 2, (size, i) => {
    const refs = { vpcRef: { name: "a".repeat(size) }, ...(i % 2 ? { subnetRef: { name: "b".repeat(size) } } : {}) };
    return createVm(`hx-${n}-${i}`, "POST", "", vm(`hx-${n}-${i}`, refs));
  });
  const overloaded: string[] = [];
  if (plan.names) {
    const count = rng.int(2000, 5000);
    const nics = Array.from({ length: count }, (_, k) => ({ subnetRef: { name: `s-${k.toString(36)}` } }));
    const body = { apiVersion: KINDS.server.apiVersion, kind: KINDS.server.kind, metadata: { name: `hn-${n}` } };
    await send(h, "create", KINDS.server, HOSTILE_NS)(`hn-${n}`, "POST", "", { ...body, spec: { nics } });
    what.push(`a Server naming ${count} subnets`);
    if (h.lookup === "index") overloaded.push(KINDS.server.resource);
  }
  if (plan.budget) {
    const count = SOAK_INDEX_BUDGET.maxObjectsPerWorkspace + rng.int(5, 15);
    const names = Array.from({ length: count }, (_, i) => `hb-${n}-${i}`);
    await inBatches(names, 8, (name, i) => createVm(name, "POST", "", vm(name, { vpcRef: { name: `gone-${i}` } })));
    what.push(`${count} small VMs (the workspace budget is ${SOAK_INDEX_BUDGET.maxObjectsPerWorkspace})`);
    if (h.lookup === "index") overloaded.push(KINDS.vm.resource);
  }
  const holdMs = rng.int(...h.holdMs);
  const probes = await hold(h, holdMs);
  await removeAll(h);
  const e: HostileEpisode = {
    kind: "dependents",
    cluster: h.hostile.cluster,
    namespace: HOSTILE_NS,
    overloaded,
    startAt,
    endAt: Date.now(),
    detail: `${what.join(", ")}; held ${Math.round(holdMs / 1000)} s, ${probes} dry-run deletes of its own`,
  };
  h.episodes.push(e);
  h.log(`hostile dependents: ${e.detail}; overloaded ${overloaded.join(", ") || "nothing"}`);
}

/** Dry-run deletes of its own targets every ~2 s for `ms` (or until the run stops); returns how many. */
async function hold(h: HostileOptions, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let probes = 0;
  while (Date.now() < until && !h.wl.signal.aborted) {
    await sleep(2000, h.wl.signal);
    for (const t of TARGETS) {
      await send(h, "delete-dry-run", t.k, t.ns)(t.name, "DELETE", `/${t.name}?dryRun=All`);
      probes++;
    }
  }
  return probes;
}

/** DELETECOLLECTION of its VMs and servers (neither is protected) until a list shows none, for up to two minutes. */
async function removeAll(h: HostileOptions): Promise<void> {
  const ws = `/clusters/${h.hostile.path}`;
  for (let i = 0; i < 60; i++) {
    let left = 0;
    for (const k of [KINDS.vm, KINDS.server]) {
      const list = await request(h.wl.conn, "GET", `${ws}${collection(k, HOSTILE_NS)}?limit=1`);
      const items = (list.body as { items?: unknown[] } | undefined)?.items;
      if (list.status === 200 && items?.length === 0) continue;
      left++;
      await send(h, "delete-collection", k, HOSTILE_NS)("", "DELETE", "");
    }
    if (left === 0) return;
    await sleep(2000);
  }
  h.log("hostile dependents: objects still listed after two minutes of deletes");
}

async function inBatches<T>(items: T[], width: number, f: (item: T, i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map((item, k) => f(item, i + k)));
  }
}
