// A hostile consumer on a real kcp: dependents whose references are 1 MiB strings, and one dependent naming a huge
// list of names. The index keeps neither (a value longer than 253 characters cannot name an object; a dependent
// naming more than the budget's names is kept unread by its key), so the webhook's memory stays where it was, the
// other consumers' deletes are decided as before, and only the hostile workspace's own deletes covered by the listing
// type get 503 (naming nothing), which the gauges show.
// The webhook runs with the image's V8 flags (NODE_FLAGS, tools/kcp/binaries.ts): without the cap on the young
// generation, RSS stayed +25 to +81 MiB after the burst with the heap back where it was (the pages V8 grew to). It runs
// alone (test/e2e/alone/, after the two-at-a-time pool), so another test's load does not delay V8 returning the pages.
// The providers and consumers act with their own ServiceAccount tokens (kcp.md §9), never kcp-admin; kcp-admin stays
// for the operator's acts: creating workspaces, letting providers bind the dep-ctrl export, restarting the webhook.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { RestClient } from "../../../src/kcp/rest.ts";
import { apiBinding, apply, createWorkspace, waitForBinding, type KObject } from "../../../tools/kcp/api.ts";
import { waitFor } from "../../../tools/kcp/process.ts";
import { startKcp } from "../../../tools/kcp/harness.ts";
import { bindGrant, consentToIndex } from "../../../tools/kcp/tenant.ts";
import { EXPORT_NAME, PATHS, TOKENS, depCtrlBinding, scrapeSeries } from "../../../tools/kcp/topology.ts";
import { dependencyRule } from "../../../tools/kcp/rules.ts";
import {
  VPCS,
  VMS,
  assertDenied,
  at,
  create,
  e2eSuite,
  exportedKind,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
} from "../helpers.ts";

const e2e = e2eSuite(() => startKcp({ tokens: TOKENS }), { lookup: "index" });
const LISTS = "root:list-provider";
const HOSTILE = "root:hostile-consumer";
const RACKS = "/apis/lists.test.io/v1/namespaces/default/racks";
const MIB = 1 << 20;

/** A provider whose Racks name VPCs in a list of strings (the listing field path `.spec.vpcNames[*]`). */
const LIST_PROVIDER = exportedKind({
  group: "lists.test.io",
  kind: "Rack",
  plural: "racks",
  specProperties: { vpcNames: { type: "array", items: { type: "string" } } },
});

const rack = (name: string, vpcNames: string[]): KObject => ({
  apiVersion: "lists.test.io/v1",
  kind: "Rack",
  metadata: { name, namespace: "default" },
  spec: { vpcNames },
});

/** The webhook's resident set (VmRSS) and V8 heap in use, in MiB. */
async function memory(): Promise<{ rss: number; heap: number }> {
  const w = e2e.bins.webhook;
  assert.ok(w?.proc.pid);
  const status = readFileSync(`/proc/${w.proc.pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
  const heap = ((await scrapeSeries(w, "nodejs_heap_size_used_bytes")) ?? NaN) / MIB;
  return { rss, heap };
}

/** Creates the first object `make(size)` kcp accepts, halving `size` after each refusal; returns the size taken. */
async function largestAccepted(ws: RestClient, size: number, make: (size: number) => KObject): Promise<number> {
  for (let s = size; s >= 1024; s = Math.floor(s / 2)) {
    try {
      await create(ws, make(s));
      return s;
    } catch (err) {
      process.stderr.write(`kcp refused a body of size ${s}: ${String(err).slice(0, 200)}\n`);
    }
  }
  throw new Error("kcp took no object of any size");
}

/** Once per kcp, whichever test runs first (either may run alone with --test-name-pattern). */
let listProvider: Promise<void> | undefined;
const setUpListProvider = (): Promise<void> => (listProvider ??= setUpListProviderAndHostile());

/** The client of the tenant owning workspace `p` (its own token). */
const as = async (p: string): Promise<RestClient> => (await e2e.tenant(p)).client;

async function setUpListProviderAndHostile(): Promise<void> {
  const kcp = e2e.kcp;
  // The operator creates the workspaces and offers the dep-ctrl export to every provider.
  await apply(kcp.ws(PATHS.depCtrl), bindGrant(EXPORT_NAME));
  await createWorkspace(kcp.admin, LISTS);
  const lists = await as(LISTS);
  // The list provider exports Racks to any consumer, binds the dep-ctrl export, consents to the index, writes its rule.
  await apply(lists, [...LIST_PROVIDER, ...bindGrant("lists.test.io")]);
  await apply(lists, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(lists, EXPORT_NAME);
  await consentToIndex(lists, "lists.test.io");
  const listRule = dependencyRule("rack-needs-vpcs", [{ resource: "vpcs", field: ".spec.vpcNames[*]" }], {
    dependent: { group: "lists.test.io", kind: "Rack", resource: "racks" },
  });
  await apply(lists, [listRule]);
  // The network and compute providers open their exports to any consumer, each with its own token.
  await apply(await as(PATHS.network), bindGrant("network.test.io"));
  await apply(await as(PATHS.compute), bindGrant("compute.test.io"));
  await createWorkspace(kcp.admin, HOSTILE);
  const hostile = await as(HOSTILE);
  await apply(hostile, [
    apiBinding("network.test.io", PATHS.network),
    apiBinding("compute.test.io", PATHS.compute),
    apiBinding("lists.test.io", LISTS),
  ]);
  for (const b of ["network.test.io", "compute.test.io", "lists.test.io"]) await waitForBinding(hostile, b);
  const calm = await as(PATHS.consumer1);
  await apply(calm, [apiBinding("lists.test.io", LISTS)]);
  await waitForBinding(calm, "lists.test.io");
}

test("a hostile consumer costs the webhook no memory and refuses only its own deletes", async () => {
  await setUpListProvider();
  const calm = await as(PATHS.consumer1);
  const hostileClient = await as(HOSTILE);
  const hostile = (): RestClient => hostileClient;
  // Both rules protect: in the calm workspace a VM and a Rack each block their VPC.
  await create(calm, vpc("calm-vpc"), vm("calm-vm", { vpc: "calm-vpc" }), vpc("free-vpc"), vpc("rack-vpc"));
  await create(calm, rack("calm-rack", ["rack-vpc"]));
  await waitForProtection(calm, `${at(VPCS)}/calm-vpc`, true);
  await waitForProtection(calm, `${at(VPCS)}/rack-vpc`, true);
  await create(hostile(), vpc("hostile-vpc"));
  const webhook = e2e.bins.webhook;
  assert.ok(webhook);
  const indexed = async (): Promise<number> =>
    (await scrapeSeries(webhook, "dependency_webhook_index_dependents")) ?? 0;
  const before = { ...(await memory()), indexed: await indexed() };

  const huge = await largestAccepted(hostile(), MIB, (s) => vm("huge-0", { vpc: "a".repeat(s) }));
  for (let i = 1; i < 300; i += 4)
    await create(
      hostile(),
      ...[0, 1, 2, 3].filter((j) => i + j < 300).map((j) => vm(`huge-${i + j}`, { vpc: "a".repeat(huge) })),
    );
  const names = await largestAccepted(hostile(), 200_000, (n) =>
    rack(
      "many-names",
      Array.from({ length: n }, (_, k) => k.toString(36)),
    ),
  );
  process.stderr.write(`hostile: 300 VMs with ${huge}-character references, one Rack naming ${names} VPCs\n`);

  await waitFor(
    "the index to hold the hostile objects",
    async () => (await indexed()) >= before.indexed + 301 || undefined,
    {
      timeoutMs: 180_000,
      intervalMs: 500,
    },
  );
  const unreadable = `dependency_webhook_index_unreadable_dependents{reason="names"}`;
  assert.equal(await scrapeSeries(webhook, unreadable), 1);
  assert.equal(await scrapeSeries(webhook, `dependency_webhook_index_workspaces_unreadable{reason="names"}`), 1);

  // The other consumer: decided as before.
  assertDenied(await tryDelete(calm, `${at(VPCS)}/calm-vpc`), /still referenced by VirtualMachine\/calm-vm$/);
  assertDenied(await tryDelete(calm, `${at(VPCS)}/rack-vpc`), /still referenced by Rack\/calm-rack$/);
  assert.deepEqual(await tryDelete(calm, `${at(VPCS)}/free-vpc`), { allowed: true });
  // The hostile consumer's own VPC deletes: 503, naming no object.
  const own = await tryDelete(hostile(), `${at(VPCS)}/hostile-vpc`);
  assert.equal(own.allowed, false);
  assert.ok(!own.allowed && own.status === 503, JSON.stringify(own));
  assert.ok(!own.allowed && /cannot read every racks\.lists\.test\.io of this workspace/.test(own.message));
  assert.ok(!own.allowed && !/many-names|huge-/.test(own.message), own.message);
  // Its VMs (unkept references) block nothing: a VM delete is no VPC delete and goes through.
  assert.deepEqual(await tryDelete(hostile(), `${at(VMS)}/huge-0`), { allowed: true });

  // Memory: the heap holds no more than the few hundred keys, and RSS comes back once V8 returns the burst's pages
  // (about 100 s after it on a quiet machine; waited for, not slept).
  let after = await memory();
  await waitFor(
    "the webhook's heap and RSS to settle within 10 MiB of where they were",
    async () => {
      after = await memory();
      return (after.heap - before.heap < 10 && after.rss - before.rss < 10) || undefined;
    },
    { timeoutMs: 300_000, intervalMs: 1_000 },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
  });
  process.stderr.write(
    `webhook memory: RSS ${before.rss.toFixed(1)} -> ${after.rss.toFixed(1)} MiB, ` +
      `heap used ${before.heap.toFixed(1)} -> ${after.heap.toFixed(1)} MiB\n`,
  );
  assert.ok(await hostile().getOptional(`${RACKS}/many-names`));
});

// A tenant with five workspaces, each filling its per-workspace budget past the brim with Racks naming 1,000 short
// names, next to an innocent consumer, on a webhook restarted with a small ceiling (4 MiB for the whole replica's
// index, 1 MiB per workspace and type) so that it is cheap: about 80 objects of 12 KB. The tenant and the innocent
// act with their own tokens.
const GREEDY = [0, 1, 2, 3, 4].map((i) => `root:greedy-${i}`);
const CEILING_MIB = 4;
const RACKS_PER_WORKSPACE = 16; // about 81 KB each by INDEX_COST: 12 fit in 1 MiB

test("a tenant with five workspaces past their budgets stays under the ceiling, and an innocent consumer is decided as before", async () => {
  const kcp = e2e.kcp;
  const bins = e2e.bins;
  await setUpListProvider();
  const calm = await as(PATHS.consumer1);
  if (!(await calm.getOptional(`${at(VPCS)}/calm-vpc`)))
    await create(calm, vpc("calm-vpc"), vm("calm-vm", { vpc: "calm-vpc" }));
  await bins.webhook?.proc.stop();
  bins.webhookArgs = [`--index-memory-limit=${CEILING_MIB}Mi`, `--index-max-bytes-per-workspace=${MIB}`];
  const webhook = await bins.startWebhook();
  const pid = webhook.proc.pid;
  const gauge = async (series: string): Promise<number> => (await scrapeSeries(webhook, series)) ?? NaN;
  const indexed = (): Promise<number> => gauge("dependency_webhook_index_dependents");
  const before = { ...(await memory()), indexed: await indexed() };

  const greedy: RestClient[] = [];
  for (const path of GREEDY) {
    await createWorkspace(kcp.admin, path);
    const ws = await as(path);
    await apply(ws, [apiBinding("network.test.io", PATHS.network), apiBinding("lists.test.io", LISTS)]);
    for (const b of ["network.test.io", "lists.test.io"]) await waitForBinding(ws, b);
    greedy.push(ws);
  }
  const names = (r: number): string[] => Array.from({ length: 1_000 }, (_, k) => (r * 1_000 + k).toString(36));
  for (const ws of greedy) {
    await create(ws, vpc("own-vpc"));
    for (let r = 0; r < RACKS_PER_WORKSPACE; r += 4)
      await create(ws, ...[0, 1, 2, 3].map((j) => rack(`hoard-${r + j}`, names(r + j))));
  }
  // The innocent arrives after the tenant filled the index.
  const innocent = calm;
  await create(innocent, vpc("late-vpc"), vpc("late-free-vpc"));
  await create(innocent, rack("late-rack", ["late-vpc", "other-vpc"]));
  const objects = GREEDY.length * RACKS_PER_WORKSPACE + 1;
  await waitFor(
    "the index to hold the tenant's Racks and the late one",
    async () => (await indexed()) >= before.indexed + objects || undefined,
    {
      timeoutMs: 180_000,
      intervalMs: 500,
    },
  );

  const charged = await gauge("dependency_webhook_index_memory_bytes");
  assert.ok(charged <= CEILING_MIB * MIB, `the index charged ${charged} bytes past the ${CEILING_MIB} MiB ceiling`);
  const share = await gauge(`dependency_webhook_index_unreadable_dependents{reason="share"}`);
  const budget = await gauge(`dependency_webhook_index_unreadable_dependents{reason="budget"}`);
  // Five budgets of 1 MiB do not fit in 4 MiB: the ceiling, not only the budget, kept some of the tenant's unread.
  assert.ok(share > 0 && budget > 0, `kept unread: share ${share}, budget ${budget}`);

  // The innocent: decided as before, on both types.
  await waitForProtection(innocent, `${at(VPCS)}/late-vpc`, true);
  assertDenied(await tryDelete(innocent, `${at(VPCS)}/late-vpc`), /still referenced by Rack\/late-rack$/);
  assertDenied(await tryDelete(innocent, `${at(VPCS)}/calm-vpc`), /still referenced by VirtualMachine\/calm-vm$/);
  assert.deepEqual(await tryDelete(innocent, `${at(VPCS)}/late-free-vpc`), { allowed: true });
  // The tenant's own VPC deletes: the documented 503, naming no object.
  for (const ws of greedy) {
    const own = await tryDelete(ws, `${at(VPCS)}/own-vpc`, { dryRun: true });
    assert.ok(!own.allowed && own.status === 503, JSON.stringify(own));
    assert.match(own.message, /cannot read every racks\.lists\.test\.io of this workspace/);
    assert.doesNotMatch(own.message, /hoard-|Rack\//); // the URL in the message names its own workspace
  }

  const after = await memory();
  process.stderr.write(
    `ceiling ${CEILING_MIB} MiB: charged ${(charged / MIB).toFixed(2)} MiB, unreadable share ${share} budget ${budget}; ` +
      `webhook RSS ${before.rss.toFixed(1)} -> ${after.rss.toFixed(1)} MiB, heap used ${before.heap.toFixed(1)} -> ` +
      `${after.heap.toFixed(1)} MiB\n`,
  );
  assert.ok(after.rss - before.rss < CEILING_MIB + 64, `RSS grew ${after.rss - before.rss} MiB`);
  assert.ok(webhook.proc.running && webhook.proc.pid === pid, "the webhook restarted");
  bins.webhookArgs = [];
});
