// Local targets in the rule model: a dependency without apiExportRef names a core type of the consumer workspace
// itself. Only the types kcp lets that workspace's own webhook configuration guard, and the rule's dependents can
// name, are allowed (LOCAL_TARGET_RESOURCES); anything else is a problem that says what is.
import type { FieldPath } from "../fieldpath/fieldpath.ts";
import { LOCAL_TARGET_RESOURCES, LOCAL_TARGET_VERSION } from "./schema.ts";
import type { GroupVersionResource } from "./types.ts";

/**
 * One valid `spec.dependencies[]` entry without `apiExportRef`: a core type of the consumer workspace itself (a local
 * target). It is protected where the rule's dependents are, through the dependent's own APIExport
 * (src/controller/local-targets.ts).
 */
export interface ParsedLocalDependency {
  index: number;
  target: GroupVersionResource;
  fieldPath: FieldPath;
}

/** A dependency without apiExportRef, its schema already checked: a local target, or why it cannot be one. */
export function parseLocal(
  e: { group: string; version: string; resource: string },
  index: number,
  fieldPath: FieldPath,
): { problems: string[] } | { local: ParsedLocalDependency } {
  const field = `spec.dependencies[${index}]`;
  const supported = (LOCAL_TARGET_RESOURCES as readonly string[]).includes(e.resource);
  if (e.group !== "" || !supported)
    return {
      problems: [
        `${field}.apiExportRef: Required value: only a type of the consumer workspace itself may leave it out, ` +
          `and those are group "" with resource ${LOCAL_TARGET_RESOURCES.join(" or ")}; ` +
          `got group ${JSON.stringify(e.group)}, resource ${JSON.stringify(e.resource)}`,
      ],
    };
  if (e.version !== LOCAL_TARGET_VERSION)
    return {
      problems: [
        `${field}.version: Unsupported value: ${JSON.stringify(e.version)}: ${e.resource} are served at ` +
          `${LOCAL_TARGET_VERSION}`,
      ],
    };
  return { local: { index, target: { group: "", version: e.version, resource: e.resource }, fieldPath } };
}
