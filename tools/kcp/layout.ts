// Where the product lives on kcp and who acts there: the workspace paths, the binaries' token identities, the dep-ctrl
// export's name, the lookup modes, and what any kcp the tools start (single shard or sharded) offers.
import type { RestClient } from "../../src/kcp/rest.ts";
import type { TokenUser } from "./harness.ts";

/** What the topology needs of a kcp: a single shard (Kcp) or the sharded setup (ShardedKcp). */
export interface KcpEnv {
  readonly rootDir: string;
  readonly baseUrl: string;
  readonly caPem: string;
  readonly admin: RestClient;
  readonly shardAdmins: RestClient[];
  ws(workspace: string): RestClient;
  kubeconfigFor(token: string, workspace: string, file?: string): string;
}

export const IDENTITIES = {
  controller: { token: "dependency-controller-token", user: "kcp-dependency-controller" },
  webhook: { token: "dependency-webhook-token", user: "kcp-dependency-webhook" },
  /** A second webhook identity with no rights until a test grants them (to hold a webhook in its starting phase). */
  standbyWebhook: { token: "standby-webhook-token", user: "kcp-dependency-webhook-standby" },
} as const satisfies Record<string, TokenUser>;

export const TOKENS: TokenUser[] = Object.values(IDENTITIES);

export type LookupMode = "index" | "live";

export const PATHS = {
  depCtrl: "root:dep-ctrl",
  network: "root:network-provider",
  compute: "root:compute-provider",
  consumer1: "root:consumer1",
  consumer2: "root:consumer2",
} as const;

export const EXPORT_NAME = "dependencies.opendefense.cloud";
