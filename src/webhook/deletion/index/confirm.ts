// The index lags kcp by its watch delay (milliseconds). Without a second look, a client that deletes its last VM and
// then the VPC would now and then be told that the VM it just deleted still blocks. So before a denial names what the
// index found, each found dependent is read again with a consistent GET (through the same virtual workspace, with the
// provider's consent): one that is gone, or no longer names the target, is dropped. Only a few are read, on the deny
// path only; any doubt (an error, too many found, an answer cut short, an object larger than CONFIRM_MAX_BYTES, the
// workspace past its rate of second looks: confirm-rate.ts) keeps every blocker the index found.
import type { Dependent, Lookup } from "../../admission.ts";
import { MAX_LISTED_BLOCKERS } from "../../admission.ts";
import { dependentCollectionPath, type FoundDependents } from "../finder.ts";
import { matchingDependents } from "../matching.ts";

/** Found dependents read again at most; past this many the denial stands as the index gave it. */
export const CONFIRM_AT_MOST = MAX_LISTED_BLOCKERS;

/**
 * Largest answer a second look reads. A dependent is a few kB; one that is larger costs parsing time on the event
 * loop every tenant shares, so it is not read at all and counts as an error: the blocker stays (the safe side).
 */
export const CONFIRM_MAX_BYTES = 256 * 1024;

/** `limited`: not read because the workspace had spent its rate of second looks (the blockers stay). */
export type ConfirmResult = "kept" | "gone" | "error" | "limited";

/** Reads one dependent now; undefined when it does not exist (404). */
export type ReadDependent = (path: string) => Promise<unknown>;

/** `/apis/<g>/<v>[/namespaces/<ns>]/<resource>/<name>` below a logical cluster's base. */
export function dependentPath(lookup: Lookup, d: Dependent): string {
  return `${dependentCollectionPath(lookup, d.namespace)}/${encodeURIComponent(d.name)}`;
}

/** `found` without the dependents a fresh read shows gone or no longer referencing the target; `tally` per read. */
export async function confirmDependents(
  found: FoundDependents,
  lookup: Lookup,
  read: ReadDependent,
  tally: (result: ConfirmResult) => void = () => {},
  allowed: (reads: number) => boolean = () => true,
): Promise<FoundDependents> {
  const n = found.dependents.length;
  if (n === 0 || n > CONFIRM_AT_MOST || !found.complete) return found;
  if (!allowed(n)) {
    for (let i = 0; i < n; i++) tally("limited");
    return found;
  }
  const checked = await Promise.all(
    found.dependents.map(async (d): Promise<Dependent | undefined> => {
      try {
        const object = await read(dependentPath(lookup, d));
        const still = object === undefined ? undefined : matchingDependents([object], lookup)[0];
        tally(still ? "kept" : "gone");
        return still;
      } catch {
        tally("error");
        return d;
      }
    }),
  );
  return { ...found, dependents: checked.filter((d): d is Dependent => d !== undefined) };
}
