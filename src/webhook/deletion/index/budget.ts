// What the index keeps of one consumer workspace is bounded, so that one tenant's objects cannot grow every replica
// past its memory limit (which would take protection down for every tenant at once, and again at each relist).
// Whatever falls outside a budget is kept as "unreadable" (its key only): the lookups of that workspace and type
// then get 503, nobody else's. A value that cannot be an object's name is not kept at all: it can never block.

export interface IndexBudget {
  /** Distinct names one dependent object may reference over all field paths; past it the object is unreadable. */
  maxNamesPerObject: number;
  /** Dependents of one type one consumer workspace may have indexed; past it new ones are unreadable. */
  maxObjectsPerWorkspace: number;
  /** Characters of keys and names (about bytes) of one type one consumer workspace may have indexed. */
  maxBytesPerWorkspace: number;
}

/**
 * Defaults, from the bench's bytes per indexed dependent (bench/README.md: 479 of heap, 693 of RSS at 100,000):
 * 20,000 dependents of one type in one workspace cost about 10-15 MiB, far inside a 512 Mi replica, and are more than
 * a workspace holds in practice. 4 MiB of characters is 20,000 dependents with names of about 200 characters each.
 */
export const DEFAULT_INDEX_BUDGET: IndexBudget = {
  maxNamesPerObject: 1_000,
  maxObjectsPerWorkspace: 20_000,
  maxBytesPerWorkspace: 4 * 1024 * 1024,
};

/** Longest object name Kubernetes accepts for any custom resource (a DNS subdomain). */
export const MAX_NAME_LENGTH = 253;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Whether `s` can be the name of a protected object. Dependencies are resources of APIExports, i.e. custom resources,
 * whose names the API server validates as DNS subdomains (lowercase, ≤ 253 characters); no such object can be named
 * by anything else, so dropping other values never lets a delete through. The length is checked first, so a 1 MiB
 * string costs nothing to reject.
 */
export function canNameObject(s: string): boolean {
  return s.length > 0 && s.length <= MAX_NAME_LENGTH && DNS_SUBDOMAIN.test(s);
}

/** Why an object is held unreadable: too many names (or too large to read), or its workspace's budget is spent. */
export type UnreadableReason = "names" | "budget";
