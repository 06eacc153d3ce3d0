// Small vocabulary for the end-to-end journeys: VPCs, subnets and VMs in consumer workspaces, and deletes whose
// outcome is read the way a client sees it (status code and message from kcp).
import assert from "node:assert/strict";
import { after, afterEach, before } from "node:test";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apply, type KObject } from "../../tools/kcp/api.ts";
import { startKcp, type Kcp } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import {
  Binaries,
  OWNER,
  PATHS,
  TOKENS,
  setupTopology,
  type LookupMode,
  vmRule,
  type KcpEnv,
  type Topology,
  type TopologyOptions,
} from "../../tools/kcp/topology.ts";

export {
  RULES,
  SUBNETS,
  VMS,
  VPCS,
  VWC_PATH,
  at,
  exists,
  subnet,
  tryDelete,
  vm,
  vpc,
  type DeleteOutcome,
} from "../../tools/kcp/objects.ts";
import { VWC_PATH, exists, tryDelete, type DeleteOutcome } from "../../tools/kcp/objects.ts";

export function assertDenied(outcome: DeleteOutcome, pattern: RegExp): void {
  assert.equal(outcome.allowed, false, `expected the delete to be denied (${String(pattern)})`);
  if (!outcome.allowed) {
    assert.equal(outcome.status, 409, outcome.message);
    assert.match(outcome.message, pattern);
  }
}

/** Waits until a dry-run delete of `path` is denied (protection active) or allowed (protection gone). */
export async function waitForProtection(
  ws: RestClient,
  path: string,
  protectedNow: boolean,
  timeoutMs = 90_000,
): Promise<void> {
  await waitFor(
    `${path} to be ${protectedNow ? "protected" : "unprotected"}`,
    async () => {
      const r = await tryDelete(ws, path, { dryRun: true });
      return (protectedNow ? !r.allowed && r.status === 409 : r.allowed) || undefined;
    },
    { timeoutMs, intervalMs: 500 },
  );
}

export async function waitForVwc(env: KcpEnv, present: boolean, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `the webhook configuration in ${PATHS.network} to be ${present ? "installed" : "removed"}`,
    async () => (await exists(env.ws(PATHS.network), VWC_PATH)) === present || undefined,
    { timeoutMs },
  );
}

export async function create(ws: RestClient, ...objects: KObject[]): Promise<void> {
  await apply(ws, objects);
}

/** A test provider's API: one namespaced kind at v1 (its APIResourceSchema) and the APIExport named after its group. */
export function exportedKind(api: {
  group: string;
  kind: string;
  plural: string;
  /** The properties of the kind's `.spec`. */
  specProperties: Record<string, unknown>;
}): KObject[] {
  const { group, kind, plural } = api;
  const schemaName = `v1.${plural}.${group}`;
  const names = { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() };
  const schema = { type: "object", properties: { spec: { type: "object", properties: api.specProperties } } };
  return [
    {
      apiVersion: "apis.kcp.io/v1alpha1",
      kind: "APIResourceSchema",
      metadata: { name: schemaName },
      spec: { group, names, scope: "Namespaced", versions: [{ name: "v1", served: true, storage: true, schema }] },
    },
    {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIExport",
      metadata: { name: group },
      spec: { resources: [{ group, name: plural, schema: schemaName, storage: { crd: {} } }] },
    },
  ];
}

export interface E2E<K extends KcpEnv = Kcp> {
  readonly kcp: K;
  readonly topo: Topology;
  readonly bins: Binaries;
  /**
   * The owner of `workspacePath` as a tenant: a ServiceAccount token scoped to that workspace (tools/kcp/tenant.ts),
   * made at the first call and shared by the file's tests. A test that plays a provider or consumer acts with it.
   */
  tenant(workspacePath: string): Promise<Tenant>;
}

/**
 * One kcp per e2e file with the whole topology, both binaries running as processes with their own identities, and
 * the VM rule applied in the compute provider. Prints the binaries' and kcp's log tails when a test fails.
 */
/** `E2E_LOOKUP=live npm run test:e2e:live` runs suites in live lookup mode; index (the default) otherwise. */
function lookupFromEnv(): LookupMode {
  const mode = process.env["E2E_LOOKUP"] ?? "index";
  if (mode !== "index" && mode !== "live") throw new Error(`E2E_LOOKUP: want index or live, got ${mode}`);
  return mode;
}

/** The topology's options, and more flags for the controller (e.g. a shorter `--resync-period`). */
export interface SuiteOptions extends TopologyOptions {
  controllerArgs?: string[];
}

export function e2eSuite(): E2E<Kcp>;
export function e2eSuite<K extends KcpEnv & { stop(): Promise<void>; logTail(n?: number): string }>(
  start: () => Promise<K>,
  opts?: SuiteOptions,
): E2E<K>;
export function e2eSuite(
  start: () => Promise<KcpEnv & { stop(): Promise<void>; logTail(n?: number): string }> = () =>
    startKcp({ tokens: TOKENS }),
  { controllerArgs = [], ...opts }: SuiteOptions = {},
): E2E<KcpEnv & { stop(): Promise<void>; logTail(n?: number): string }> {
  type K = KcpEnv & { stop(): Promise<void>; logTail(n?: number): string };
  let state: Omit<E2E<K>, "tenant"> | undefined;
  const tenants = new Map<string, Promise<Tenant>>();
  const tenantOf = (workspacePath: string): Promise<Tenant> => {
    let t = tenants.get(workspacePath);
    if (!t) {
      t = tenant(must(state).kcp, workspacePath, { name: OWNER });
      tenants.set(workspacePath, t);
      void t.catch(() => tenants.delete(workspacePath)); // a later call tries again
    }
    return t;
  };
  let failed = false;
  before(async () => {
    const kcp = await start();
    try {
      const lookup = opts.lookup ?? lookupFromEnv();
      const topo = await setupTopology(kcp, { ...opts, lookup });
      const bins = new Binaries(kcp, lookup === "both" ? "index" : lookup);
      bins.controllerArgs = controllerArgs;
      state = { kcp, topo, bins };
      for (const t of Object.values(topo.tenants)) tenants.set(t.workspace, Promise.resolve(t));
      await bins.startWebhook();
      await bins.startController();
      // The compute provider writes its rule with its own token, as setupTopology had every provider and consumer
      // do its own setup (exports, consent, bindings); only the workspaces, dep-ctrl's install and the processes
      // are the operator's (kcp-admin).
      await apply((await tenantOf(PATHS.compute)).client, vmRule(topo.vars));
    } catch (err) {
      if (!state) await kcp.stop();
      throw err;
    }
  });
  afterEach((t) => {
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (!state) return;
    if (failed) process.stderr.write(`\n${state.bins.logTails()}\n--- kcp log tail ---\n${state.kcp.logTail(30)}\n`);
    await state.bins.stop();
    await state.kcp.stop();
  });
  return {
    get kcp(): K {
      return must(state).kcp;
    },
    get topo(): Topology {
      return must(state).topo;
    },
    get bins(): Binaries {
      return must(state).bins;
    },
    tenant: tenantOf,
  };
}

function must<T>(v: T | undefined): T {
  if (v === undefined) throw new Error("the e2e environment did not start (see the before hook's error)");
  return v;
}
