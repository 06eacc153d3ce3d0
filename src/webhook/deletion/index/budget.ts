// What the index keeps of one consumer workspace is bounded, so that one tenant's objects cannot grow every replica
// past its memory limit (which would take protection down for every tenant at once, and again at each relist).
// Whatever falls outside a budget is kept as "unreadable" (its key only): the lookups of that workspace and type
// then get 503, nobody else's. A value that cannot be an object's name is not kept at all: it can never block.

export interface IndexBudget {
  /** Distinct names one dependent object may reference over all field paths; past it the object is unreadable. */
  maxNamesPerObject: number;
  /** Dependents of one type one consumer workspace may have indexed; past it new ones are unreadable. */
  maxObjectsPerWorkspace: number;
  /** Heap bytes (by INDEX_COST) of one type one consumer workspace may have indexed, unreadable dependents included. */
  maxBytesPerWorkspace: number;
}

/**
 * Defaults: 20,000 dependents of one type in one workspace are more than a workspace holds in practice, and 8 MiB of
 * heap by INDEX_COST is 20,000 one-reference dependents whose own and referenced names have up to about 230
 * characters together (bench/README.md, "No key string per dependent": 207 heap bytes per dependent with 12- and
 * 9-character names). A workspace whose dependents name 1,000 objects each reaches it at 110-220 dependents.
 */
export const DEFAULT_INDEX_BUDGET: IndexBudget = {
  maxNamesPerObject: 1_000,
  maxObjectsPerWorkspace: 20_000,
  maxBytesPerWorkspace: 8 * 1024 * 1024,
};

/**
 * The replica's index memory ceiling by default (ceiling.ts), for the chart's 512 Mi limit: (512 − 128) / 1.6 MiB,
 * where 128 MiB is the webhook idle with 100 rules plus reviews and watch events in flight, and 1.6 the RSS a heap
 * byte of the index costs (docs/operations.md, "Sizing the webhook").
 */
export const DEFAULT_INDEX_MEMORY_LIMIT = 240 * 2 ** 20;

/**
 * What one indexed dependent costs on the heap, in bytes, fitted to `node bench/index-heap.ts` (V8 in Node 24, no
 * pointer compression; forced collections; bench/README.md, "What the index holds"): within 2% of the measured heap
 * for one reference with 9-, 63- and 253-character names, 10 and 100 references of 4 characters, 1,000 names shared
 * by every dependent of a workspace, and unreadable dependents, with hash tables 72% full (the average: V8 doubles
 * one when full). Fuller tables cost up to 9% less, a table just doubled up to 20% more. Characters of the
 * dependent's name and of every referenced name cost one byte each on top (one-byte strings). No key string is held
 * (record.ts).
 */
export const INDEX_COST = {
  /** The record, its entry in its namespace's map, and the header of its name string. */
  dependent: 120,
  /** A referenced name no other dependent of the workspace names: its string and a reverse-map entry. */
  newName: 63,
  /** A referenced name another dependent of the workspace names too: an entry in that name's record set. */
  sharedName: 25,
  /** A path at which the dependent names more than one object: the array of names, and a slot per name. */
  list: 89,
  listSlot: 8,
  /** An unreadable dependent: the record, its entries in its namespace's map and unreadable set, its name's header. */
  unreadable: 152,
} as const;

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

/**
 * Why an object is held unreadable: too many names (or too large to read), its workspace's budget is spent, or its
 * workspace is past its share of the replica's index memory (ceiling.ts).
 */
export type UnreadableReason = "names" | "budget" | "share";

export const UNREADABLE_REASONS: readonly UnreadableReason[] = ["names", "budget", "share"];
