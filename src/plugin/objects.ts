// One object identity for every command: what an object of a workspace is (its type's group/resource and kind, its
// namespace and name), its id, and how a listed item becomes one. Pure.
import { isRecord } from "../util/json.ts";

export interface ObjectRef {
  group: string;
  /** Plural, e.g. `vpcs`. */
  resource: string;
  kind: string;
  /** Undefined for a cluster-scoped object. */
  namespace?: string;
  name: string;
}

/**
 * `<group>/<resource>/<namespace>/<name>`: the namespace is empty for a cluster-scoped object, the group for the core
 * group. Teardown's plan prints it (`objects[].id`, docs/operations.md), so its format is part of the plugin's output.
 */
export const objectId = (o: Pick<ObjectRef, "group" | "resource" | "namespace" | "name">): string =>
  `${o.group}/${o.resource}/${o.namespace ?? ""}/${o.name}`;

/** A listed item's metadata and identity; undefined for something that is no named object. */
export function objectOf(
  type: { group: string; name: string; kind: string; namespaced: boolean },
  item: unknown,
): { ref: ObjectRef; meta: Record<string, unknown> } | undefined {
  const meta = isRecord(item) && isRecord(item["metadata"]) ? item["metadata"] : undefined;
  if (!meta || typeof meta["name"] !== "string" || meta["name"] === "") return undefined;
  const ns = meta["namespace"];
  const ref: ObjectRef = { group: type.group, resource: type.name, kind: type.kind, name: meta["name"] };
  if (type.namespaced && typeof ns === "string" && ns !== "") ref.namespace = ns;
  return { ref, meta };
}

/** `metadata.annotations[key] === "true"`. */
export const annotated = (meta: Record<string, unknown>, key: string): boolean =>
  isRecord(meta["annotations"]) && meta["annotations"][key] === "true";
