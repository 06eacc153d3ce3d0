// The soak's history: what kcp itself reported (watch events with resourceVersions and local receive times, read with
// the shard admin identity) and what the workload and the fault injector did (requests with sent/answered times).
// The checker reads only this; it is written to JSON for a failing run and can be checked again from the file.

/** An object's identity in kcp: logical cluster, group/resource, namespace ("" when cluster-scoped), name. */
export interface ObjectKey {
  cluster: string;
  resource: string; // "vpcs.network.test.io", "namespaces", "dependencyrules.dependencies.opendefense.cloud"
  namespace: string;
  name: string;
}

export interface WatchRecord extends ObjectKey {
  type: "ADDED" | "MODIFIED" | "DELETED" | "INITIAL";
  shard: string;
  /** etcd revision of the shard: comparable across every object on the same shard. */
  rv: number;
  recvAt: number;
  /** The object as kcp sent it, minus managedFields. */
  object: Record<string, unknown>;
}

export type OpKind =
  | "create"
  | "update"
  | "delete"
  | "delete-dry-run"
  | "delete-collection"
  | "annotate-skip"
  | "delete-namespace"
  | "create-namespace"
  | "delete-workspace"
  | "rule-churn"
  | "probe"
  | "window-probe"
  | "careless-rule"
  | "forge-status"
  | "forge-slice";

export interface OpRecord {
  id: number;
  worker: string;
  kind: OpKind;
  cluster: string;
  workspace: string;
  resource: string;
  namespace: string;
  name: string;
  sentAt: number;
  answeredAt: number;
  /** HTTP status (0: no answer, e.g. a connection error). */
  status: number;
  message: string;
  detail?: string;
}

export type FaultKind =
  | "kill-webhook-replica"
  | "kill-all-webhooks"
  | "stall-webhook-replica"
  | "stall-all-webhooks"
  | "webhook-unreachable"
  | "kill-controller"
  | "stall-shard"
  | "careless-rule";

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  startAt: number;
  endAt: number;
  /** True when no webhook replica could answer between startAt and endAt (I4 applies). */
  webhookDown: boolean;
  /** A faulty rule's dependent resource ("gadgets.soak.test.io"): it may refuse only where such objects exist (I5). */
  dependent?: string;
  /** The careless author's flavour: a path that answers 403, or a provider that never gave the index consent. */
  flavour?: CarelessFlavour;
}

export type CarelessFlavour = "unreadable-path" | "no-index-consent";

/**
 * What the hostile consumer did (tools/soak/hostile.ts, slow-uploads.ts): no fault of the system, so it excuses
 * nothing but the documented answer to its own overload (I5): oversized references (never kept, never refusing),
 * dependents over the index's names cap or workspace budget (503 for that workspace's deletes the type covers), or
 * slow uploads straight to the replicas (no genuine review may be refused for them).
 */
export interface HostileEpisode {
  /** provider: the hostile provider's forged rule status or endpoint slice (tools/soak/hostile-provider.ts). */
  kind: "dependents" | "slow-uploads" | "provider";
  /** The hostile consumer's logical cluster and namespace (dependents episodes). */
  cluster: string;
  namespace: string;
  /** Dependent resources the episode put over the index's names cap or budget (index mode; none in live mode). */
  overloaded: string[];
  startAt: number;
  /** When its objects were seen gone (dependents) or its connections closed (slow uploads). */
  endAt: number;
  detail: string;
}

export interface ProcessExit {
  process: string;
  at: number;
  code: number | null;
  expected: boolean;
}

export interface WindowSample {
  /** ms from the dependent's create being answered to the first denial naming it. */
  visibleAfterMs: number;
  at: number;
}

export interface History {
  seed: number;
  startedAt: number;
  endedAt: number;
  windowMs: number;
  boundMs: number;
  mode: string;
  weakened: boolean;
  /** Workspace paths of the logical clusters, for reports. */
  workspaces: Record<string, string>;
  /** Which logical clusters were deleted as a whole (their objects go with them). */
  watches: WatchRecord[];
  ops: OpRecord[];
  faults: FaultRecord[];
  exits: ProcessExit[];
  window: WindowSample[];
  /** Watch gaps (a relist after 410 Gone or a broken stream): the checker reports them. */
  gaps: { shard: string; what: string; at: number }[];
  /** The hostile consumer's and the hostile provider's episodes (absent in histories from before they existed). */
  hostile?: HostileEpisode[];
  /**
   * Connections the hostile provider's counting listener accepted: each is a binary following a URL a tenant wrote
   * into its endpoint slice (I6; absent in histories from before the hostile provider existed).
   */
  tenantConnections?: number;
  /** The weakened build that reads rules' status back (tools/soak/status-reader.ts), and whether kcp's maximal
   * permission policy on the dep-ctrl export was off (so a tenant's forged status landed). */
  statusReadBack?: boolean;
  statusPolicyOff?: boolean;
  /**
   * Local targets (docs/architecture.md): per dependent export, which consumers accepted its
   * validatingwebhookconfigurations claim and which declined it, fixed for the run (absent in older histories).
   */
  localTargets?: LocalTargetConsent[];
}

/** One dependent export's claim as the consumers answered it: logical clusters that accepted and that declined. */
export interface LocalTargetConsent {
  /** `<provider's logical cluster>/<export name>`: the rule's workspace and its `spec.dependent.apiExportName`. */
  export: string;
  accepted: string[];
  declined: string[];
}

export const keyOf = (k: ObjectKey): string => `${k.cluster}|${k.resource}|${k.namespace}|${k.name}`;
