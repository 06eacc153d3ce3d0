// Which listed objects are dependents of the target: pure, shared by every finder (live lists now, an index later).
import { references } from "../../fieldpath/fieldpath.ts";
import { asRecord, nonEmptyString } from "../../util/json.ts";
import type { Dependent, Lookup } from "../admission.ts";

/** The part of a Lookup that matching reads: the plugin matches without a consumer cluster or rule key. */
export type MatchKey = Pick<Lookup, "name" | "fieldPaths" | "self">;

/** The dependents among `items` (a page of a list) that reference the lookup's name at any of its field paths. */
export function matchingDependents(items: readonly unknown[], lookup: MatchKey): Dependent[] {
  const out: Dependent[] = [];
  for (const item of items) {
    const path = lookup.fieldPaths.find((p) => references(item, p, lookup.name));
    if (!path) continue;
    const meta = asRecord(asRecord(item)?.["metadata"]) ?? {};
    const name = nonEmptyString(meta["name"]);
    if (name === undefined) continue;
    const namespace = nonEmptyString(meta["namespace"]);
    if (lookup.self && lookup.self.name === name && lookup.self.namespace === namespace) continue;
    out.push(namespace ? { namespace, name, field: path.source } : { name, field: path.source });
  }
  return out;
}
