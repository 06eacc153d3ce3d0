// The soak's local-target rule (issue 31, docs/architecture.md "Local targets"): a vault provider, a tenant acting only
// with its own ServiceAccount token, exports Endpoints (`.spec.secretRef.name` names a Secret of the consumer workspace
// itself) with the validatingwebhookconfigurations claim, grants the controller its export's content
// (deploy/rbac/provider-local-targets.yaml) and the webhook its index consent, and writes the rule. Each consumer's own
// tenant binds the export: every innocent consumer accepts the claim but DECLINING, and so does not the hostile one.
// The run's workers then create and delete Secrets and Endpoints like any other pair; the checker holds the accepting
// consumers to I1 and the declining ones to "their deletes go through" (invariants/consent.ts).
import { readFileSync } from "node:fs";
import path from "node:path";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { RestClient } from "../../src/kcp/rest.ts";
import {
  bindVault,
  grantLocalTargets,
  SECRETS,
  VAULT_GROUP,
  vaultApi,
  vaultRule,
} from "../../test/e2e/local-targets.ts";
import { apply, createWorkspace, waitForBinding } from "../kcp/api.ts";
import { REPO_ROOT } from "../kcp/harness.ts";
import { tryDelete } from "../kcp/objects.ts";
import { waitFor } from "../kcp/process.ts";
import type { ShardedKcp } from "../kcp/sharded.ts";
import { consentToIndex, tenant } from "../kcp/tenant.ts";
import { EXPORT_NAME, PATHS, depCtrlBinding, type LookupMode } from "../kcp/topology.ts";
import type { LocalTargetConsent } from "./history.ts";
import type { Consumer } from "./tenants.ts";

export const VAULT_PROVIDER = "root:vault-provider";
/**
 * On shard-1, unlike the other providers, so that dep-ctrl is bound on both shards in the soak. Placing it there
 * first hid a gap: the controller reached an export's virtual workspace only on the shards the dep-ctrl slice lists,
 * so shard-1's consumers went uncounted with every provider on root. It now also visits every Shard of root
 * (src/controller/local-targets-shards.ts); multishard.test.ts proves that case with the provider on root.
 */
export const VAULT_SHARD = "shard-1";
/** The innocent consumer that declines the claim: on shard-1, beside consumer2, which accepts. */
export const DECLINING = "root:consumer3";
const RULES = "/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules";

export interface Vault {
  cluster: LogicalClusterName;
  /** The provider's own client (its token, its workspace). */
  provider: RestClient;
  /** Each consumer's own client, by workspace path. */
  consumers: Map<string, RestClient>;
  consent: LocalTargetConsent;
}

/**
 * The provider's export, grants and binding of dep-ctrl, and every consumer's binding (the rule comes later, with the
 * controller running: `protectLocalTargets`). The operator creates the workspace and hands its owner a token.
 */
export async function setupVault(
  kcp: ShardedKcp,
  innocent: Consumer[],
  hostile: Consumer,
  lookup: LookupMode,
): Promise<Vault> {
  const cluster = await createWorkspace(kcp.admin, VAULT_PROVIDER, { shard: VAULT_SHARD });
  const provider = (await tenant(kcp, VAULT_PROVIDER, { name: "owner" })).client;
  await apply(provider, vaultApi());
  await apply(provider, depCtrlBinding(PATHS.depCtrl));
  await waitForBinding(provider, EXPORT_NAME);
  if (lookup === "index") await consentToIndex(provider, VAULT_GROUP);
  await grantLocalTargets(
    provider,
    readFileSync(path.join(REPO_ROOT, "deploy/rbac/provider-local-targets.yaml"), "utf8"),
  );
  const consent: LocalTargetConsent = { export: `${cluster}/${VAULT_GROUP}`, accepted: [], declined: [] };
  const clients = new Map<string, RestClient>();
  await Promise.all(
    [...innocent, hostile].map(async (c) => {
      const accept = c !== hostile && c.path !== DECLINING;
      const client = (await tenant(kcp, c.path, { name: "owner" })).client;
      await bindVault(client, VAULT_PROVIDER, accept);
      await waitForBinding(client, VAULT_GROUP);
      clients.set(c.path, client);
      (accept ? consent.accepted : consent.declined).push(c.cluster);
    }),
  );
  return { cluster, provider, consumers: clients, consent };
}

/**
 * Writes the rule and waits until the controller counts the accepting consumers protected and each of them refuses a
 * dry-run delete of a Secret an Endpoint names (kcp has loaded the configuration), then removes those probe objects,
 * so the run starts with Secrets protected where the consumer consented.
 */
export async function protectLocalTargets(vault: Vault, consumers: Consumer[]): Promise<void> {
  await apply(vault.provider, [vaultRule()]);
  const total = vault.consent.accepted.length + vault.consent.declined.length;
  let last = "no LocalTargetsProtected condition";
  await waitFor(
    `LocalTargetsProtected in ${vault.consent.accepted.length} of ${total} consumers`,
    async () => {
      const r = await vault.provider.get<{ status?: { conditions?: Record<string, string>[] } }>(
        `${RULES}/endpoint-credentials`,
      );
      const c = r.status?.conditions?.find((x) => x["type"] === "LocalTargetsProtected");
      if (c) last = `${c["status"]}/${c["reason"]}: ${c["message"]}`;
      const counting = `in ${vault.consent.accepted.length} of ${total} consumer workspaces`;
      return (c?.["status"] === "True" && c["message"]?.includes(counting)) || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; the rule said ${last}`);
  });
  const accepting = consumers.filter((c) => vault.consent.accepted.includes(c.cluster));
  await Promise.all(accepting.map((c) => probeOnce(vault.consumers.get(c.path) as RestClient)));
}

/** A Secret named by an Endpoint: wait until its dry-run delete is denied, then delete both (the Endpoint first). */
async function probeOnce(ws: RestClient): Promise<void> {
  const meta = { name: "lt-probe", namespace: "default" };
  await apply(ws, [
    { apiVersion: "v1", kind: "Secret", metadata: meta, stringData: { token: "probe" } },
    { apiVersion: `${VAULT_GROUP}/v1`, kind: "Endpoint", metadata: meta, spec: { secretRef: { name: "lt-probe" } } },
  ]);
  const secret = `${SECRETS}/lt-probe`;
  await waitFor(
    "a referenced Secret's delete denied",
    async () => {
      const r = await tryDelete(ws, secret, { dryRun: true });
      return (!r.allowed && r.status === 409) || undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
  await ws.request("DELETE", `/apis/${VAULT_GROUP}/v1/namespaces/default/endpoints/lt-probe`);
  await waitFor(
    "the probe Secret deleted once its Endpoint is gone",
    async () => (await tryDelete(ws, secret)).allowed || undefined,
    {
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  );
}
