// The hostile provider (issue 29): a tenant with a workspace of its own, root:hostile-provider, that acts only with a
// ServiceAccount token scoped to it (tools/kcp/tenant.ts; never kcp-admin). It exports Gadgets (nobody binds them), binds
// the dep-ctrl export, gives the index its consent, and writes a valid rule that gadgets depend on the network
// provider's VPCs: a rule gating another provider's type, in every consumer the soak's workers delete VPCs in. Then, at
// seeded random moments, one attack per episode (status and slice in turn), repeated every ~2 s while it holds:
//   - status: it forges its rule's status with the next of the reasons the webhook once read from it (forgeries.ts:
//     IndexRevoked, IndexLost, IndexResyncing, LiveLookup, Indexed, DependentInvalid, ChecksDeclined, at 2099). With
//     the dep-ctrl export's maximal permission policy on (as getting-started installs it) kcp refuses each write 403,
//     and the attempts are counted; with it off (--no-status-policy, --weakened-status) the forgery lands and the
//     controller rewrites the truth;
//   - slice: it rewrites its APIExportEndpointSlice's status to URLs the webhook must refuse: another host (a counting
//     listener on loopback, over https), kcp with a query, another cluster's path (the network provider's own URLs),
//     and kcp over http (the listener's, too).
// No fault of the system: I5 excuses nothing for it, so the innocent consumers' deletes must be decided as if it did
// not exist, and the listener must see no connection (I6). Each episode is recorded with what it wrote and how kcp
// answered.
import https from "node:https";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import { ENDPOINT_SLICES_PATH } from "../../src/kcp/virtualworkspace.ts";
import { apply, createWorkspace, waitForBinding } from "../kcp/api.ts";
import { CountingListener, FORGERIES, forgedStatus, type Forgery } from "../kcp/forgeries.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import { waitFor } from "../kcp/process.ts";
import { dependencyRule } from "../kcp/rules.ts";
import type { ShardedKcp } from "../kcp/sharded.ts";
import { consentToIndex, tenant } from "../kcp/tenant.ts";
import { EXPORT_NAME, PATHS, depCtrlBinding } from "../kcp/topology.ts";
import type { History, HostileEpisode } from "./history.ts";
import type { ShardConn } from "./kube.ts";
import { request } from "./kube.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";

export const HOSTILE_PROVIDER = "root:hostile-provider";
export const HOSTILE_EXPORT = "hostile.test.io";
export const HOSTILE_RULE = "gadget-deps";
const RULE_PATH = `/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules/${HOSTILE_RULE}`;
const merge = "application/merge-patch+json";

/** What the soak's environment keeps of the hostile provider: its tenant's connection and the URLs it forges. */
export interface HostileProvider {
  cluster: LogicalClusterName;
  /** The front-proxy with the tenant's own token (scoped to its workspace). */
  conn: ShardConn;
  listener: CountingListener;
  /** Slice URL sets the webhook must refuse, by what makes each one refused. */
  forgedUrls: Record<SliceAttack, string[]>;
}

export type SliceAttack = "another host" | "kcp with a query" | "another cluster's path" | "http";

/**
 * The operator creates the workspace and hands its owner a token (the topology's platform install already lets every
 * tenant bind the dep-ctrl export: deploy/rbac/dep-ctrl-bind.yaml); every other step runs with the tenant's token.
 */
export async function setupHostileProvider(kcp: ShardedKcp): Promise<HostileProvider> {
  const cluster = await createWorkspace(kcp.admin, HOSTILE_PROVIDER, { shard: "root" });
  const owner = await tenant(kcp, HOSTILE_PROVIDER, { name: "owner" });
  const ws = owner.client;
  await apply(ws, readFileSync(path.join(REPO_ROOT, "tools/soak/fixtures/hostile-provider.yaml"), "utf8"));
  await apply(ws, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(ws, EXPORT_NAME);
  await consentToIndex(ws, HOSTILE_EXPORT);
  await apply(ws, [
    dependencyRule(HOSTILE_RULE, [{ resource: "vpcs", path: PATHS.network, exportName: "network.test.io" }], {
      dependent: { group: HOSTILE_EXPORT, kind: "Gadget", resource: "gadgets" },
    }),
  ]);
  const listener = new CountingListener();
  await listener.start();
  // kcp makes the export's slice itself; the attacks rewrite its status.
  await waitFor(
    `${HOSTILE_PROVIDER}'s endpoint slice ${HOSTILE_EXPORT}`,
    async () => (await ws.getOptional(`${ENDPOINT_SLICES_PATH}/${HOSTILE_EXPORT}`)) !== undefined || undefined,
  );
  // What the attacker knows of kcp: its shards' virtual-workspace URLs, as any slice of a bound export shows them.
  const networkUrls = await waitFor("the network provider's slice URLs", async () => {
    const slice = await kcp.ws(PATHS.network).get<SliceStatus>(`${ENDPOINT_SLICES_PATH}/network.test.io`);
    const urls = slice.status?.endpoints?.map((e) => e.url) ?? [];
    return urls.length > 0 ? urls : undefined;
  });
  const own = (u: string): string =>
    u.replace(/\/services\/apiexport\/[^/]+\/[^/]+/, `/services/apiexport/${cluster}/${HOSTILE_EXPORT}`);
  const at = (scheme: string): string =>
    `${scheme}://127.0.0.1:${listener.port}/services/apiexport/${cluster}/${HOSTILE_EXPORT}`;
  const forgedUrls: Record<SliceAttack, string[]> = {
    "another host": [at("https")],
    // Its own path with a query, and a list of every cluster's subnets through the network provider's.
    "kcp with a query": [
      ...networkUrls.map((u) => `${own(u)}?x=1`),
      `${networkUrls[0]}/clusters/*/apis/network.test.io/v1/subnets?x=`,
    ],
    "another cluster's path": networkUrls,
    http: [...networkUrls.map((u) => own(u).replace(/^https:/, "http:")), at("http")],
  };
  const conn: ShardConn = {
    server: kcp.baseUrl.replace(/\/clusters\/.*$/, "").replace(/\/+$/, ""),
    agent: new https.Agent({ keepAlive: true, ca: kcp.caPem }),
    headers: { authorization: `Bearer ${owner.token}` },
  };
  return { cluster, conn, listener, forgedUrls };
}

interface SliceStatus {
  status?: { endpoints?: { url: string }[] };
}

type Attack = { kind: "status"; forgery: Forgery } | { kind: "slice"; attack: SliceAttack };

const STATUS_ATTACKS: readonly Attack[] = FORGERIES.map((forgery) => ({ kind: "status" as const, forgery }));
const SLICE_ATTACKS: readonly Attack[] = (
  ["another host", "kcp with a query", "another cluster's path", "http"] as const
).map((attack) => ({ kind: "slice" as const, attack }));

export interface ProviderOptions {
  wl: WorkloadOptions;
  provider: HostileProvider;
  everyMs: [number, number];
  holdMs: [number, number];
  /** How often an episode writes its forgery again while it holds (the controller rewrites a forged status). */
  againMs: number;
  episodes: HostileEpisode[];
  log: (line: string) => void;
}

/** What the hostile provider takes of the soak's options (soak.ts): the hostile consumer's pace. */
export interface ProviderSoakOptions {
  hostileEveryMs: [number, number];
  hostileHoldMs: [number, number];
  log: (line: string) => void;
}

/** The hostile provider's worker on the generator it is handed; it writes again every 2 s while an episode holds. */
export function startHostileProvider(
  provider: HostileProvider,
  o: ProviderSoakOptions,
  history: History,
  wl: WorkloadOptions,
): Promise<void> {
  const episodes = (history.hostile ??= []);
  return hostileProvider({
    wl,
    provider,
    everyMs: o.hostileEveryMs,
    holdMs: o.hostileHoldMs,
    againMs: 2000,
    episodes,
    log: o.log,
  });
}

/** Episodes at seeded random moments until the run stops, a status forgery first; the slice is restored after each. */
export async function hostileProvider(p: ProviderOptions): Promise<void> {
  const { rng, signal } = p.wl;
  for (let n = 0; !signal.aborted; n++) {
    await sleep(rng.int(...p.everyMs), signal);
    if (signal.aborted) break;
    // Status and slice in turn, so that even a short run has both. The forged reasons in order, those that said
    // "protected, index out of reach" (IndexRevoked, IndexLost, IndexResyncing) first; the slice's URL set, seeded.
    const attack = n % 2 === 0 ? (STATUS_ATTACKS[(n / 2) % STATUS_ATTACKS.length] as Attack) : rng.pick(SLICE_ATTACKS);
    const holdMs = rng.int(...p.holdMs);
    const startAt = Date.now();
    const answers = await hold(p, attack, holdMs);
    if (attack.kind === "slice") await writeSlice(p, []); // restored even when the run stops meanwhile
    const by = [...new Set(answers)].map((s) => `${answers.filter((x) => x === s).length}× ${s}`).join(", ");
    const what =
      attack.kind === "status"
        ? `forged its rule's status ${attack.forgery.type}=${attack.forgery.status} ${attack.forgery.reason}`
        : `rewrote its slice to ${attack.attack} (${p.provider.forgedUrls[attack.attack].join(", ")})`;
    const e: HostileEpisode = {
      kind: "provider",
      cluster: p.provider.cluster,
      namespace: "",
      overloaded: [],
      startAt,
      endAt: Date.now(),
      detail: `${what}: ${answers.length} writes over ${Math.round(holdMs / 1000)} s, answered ${by}`,
    };
    p.episodes.push(e);
    p.log(`hostile provider: ${e.detail}`);
  }
}

/** Writes the attack's forgery every `againMs` for `ms` (or until the run stops); returns each write's status. */
async function hold(p: ProviderOptions, attack: Attack, ms: number): Promise<number[]> {
  const until = Date.now() + ms;
  const answers: number[] = [];
  do {
    const status =
      attack.kind === "status"
        ? await forgeStatus(p, attack.forgery)
        : await writeSlice(p, p.provider.forgedUrls[attack.attack]);
    answers.push(status);
    await sleep(p.againMs, p.wl.signal);
  } while (Date.now() < until && !p.wl.signal.aborted);
  return answers;
}

function send(p: ProviderOptions, kind: "forge-status" | "forge-slice", resource: string, name: string) {
  return (path: string, body: unknown): Promise<number> =>
    p.wl.log
      .send(
        p.provider.conn,
        {
          worker: "hostile-provider",
          kind,
          cluster: p.provider.cluster,
          workspace: HOSTILE_PROVIDER,
          resource,
          namespace: "",
          name,
        },
        "PATCH",
        `/clusters/${HOSTILE_PROVIDER}${path}`,
        { body, contentType: merge },
      )
      .then((a) => a.status);
}

/** Its rule's status, forged for the rule's current generation (read with its own token). */
async function forgeStatus(p: ProviderOptions, f: Forgery): Promise<number> {
  const rule = await request(p.provider.conn, "GET", `/clusters/${HOSTILE_PROVIDER}${RULE_PATH}`);
  const generation = (rule.body as { metadata?: { generation?: number } } | undefined)?.metadata?.generation ?? 1;
  return send(
    p,
    "forge-status",
    "dependencyrules",
    HOSTILE_RULE,
  )(`${RULE_PATH}/status`, {
    status: forgedStatus(f, generation),
  });
}

function writeSlice(p: ProviderOptions, urls: readonly string[]): Promise<number> {
  return send(
    p,
    "forge-slice",
    "apiexportendpointslices",
    HOSTILE_EXPORT,
  )(`${ENDPOINT_SLICES_PATH}/${HOSTILE_EXPORT}/status`, { status: { endpoints: urls.map((url) => ({ url })) } });
}
