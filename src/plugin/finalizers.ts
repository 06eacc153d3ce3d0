// Who usually owns a finalizer, from its name alone. A finalizer is a string any writer may add; the controller that
// removes it is known only by convention (its domain prefix). This table names the conventions a kcp user meets:
// api-syncagent's, kcp's own, Kubernetes'. It says "usually": a tenant may write any of these names itself. And how
// long they have held an object: its deletionTimestamp against a clock the caller reads. Pure; why and teardown share it.

export interface FinalizerOwner {
  /** Who usually removes it. */
  owner: string;
  /** When it is removed, and what a stuck one usually means. */
  note?: string;
}

interface Known extends FinalizerOwner {
  /** The whole finalizer name. */
  exact?: string;
  /** The part before the slash is this domain or a subdomain of it (`kcp.io` matches `apis.kcp.io/...`). */
  domain?: string;
}

export const UNKNOWN_OWNER = "unknown owner, ask whoever set it";

// The first entry that matches names the owner, so the specific entries come before the domains that contain them.
const KNOWN: readonly Known[] = [
  {
    exact: "kubernetes",
    owner: "Kubernetes (the namespace controller)",
    note: "removed once every object in the namespace is gone",
  },
  {
    exact: "foregroundDeletion",
    owner: "Kubernetes (the garbage collector)",
    note: "removed once every dependent that blocks owner deletion (ownerReferences with blockOwnerDeletion) is gone",
  },
  {
    exact: "orphan",
    owner: "Kubernetes (the garbage collector)",
    note: "removed once the dependents' ownerReferences to this object are cleared",
  },
  {
    domain: "syncagent.kcp.io",
    owner: "api-syncagent",
    note: "removed once the agent has deleted the object's copy on the service cluster; stuck when no agent serves it or two agents fight over it",
  },
  {
    exact: "core.kcp.io/logicalcluster",
    owner: "kcp (the workspace controller)",
    note: "removed once the workspace's LogicalCluster is gone",
  },
  {
    exact: "core.kcp.io/logicalcluster-deletion",
    owner: "kcp (the logical cluster deletion controller)",
    note: "removed once the workspace's content is deleted",
  },
  { domain: "kcp.io", owner: "kcp" },
  { domain: "kubernetes.io", owner: "Kubernetes" },
  { domain: "k8s.io", owner: "Kubernetes" },
];

function matches(k: Known, name: string): boolean {
  if (k.exact !== undefined) return name === k.exact;
  const slash = name.indexOf("/");
  if (slash <= 0 || k.domain === undefined) return false;
  const domain = name.slice(0, slash);
  return domain === k.domain || domain.endsWith(`.${k.domain}`);
}

/** Who usually removes the finalizer `name`; UNKNOWN_OWNER when its name follows no known convention. */
export function finalizerOwner(name: string): FinalizerOwner {
  const k = KNOWN.find((x) => matches(x, name));
  if (!k) return { owner: UNKNOWN_OWNER };
  return k.note !== undefined ? { owner: k.owner, note: k.note } : { owner: k.owner };
}

/** Whole seconds from the deletionTimestamp `since` to `nowMs`, 0 under clock skew; undefined when `since` is no time. */
export function secondsSince(since: string, nowMs: number): number | undefined {
  const at = Date.parse(since);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.floor((nowMs - at) / 1000));
}

/** `42s`, `5m12s`, `3h4m`, `2d5h`: the two largest units, as kubectl shows ages. */
export function age(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (d > 0) return `${d}d${h > 0 ? `${h}h` : ""}`;
  if (h > 0) return `${h}h${m > 0 ? `${m}m` : ""}`;
  if (m > 0) return `${m}m${s > 0 ? `${s}s` : ""}`;
  return `${s}s`;
}
