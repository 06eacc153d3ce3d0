// A path's stored resolution (src/api/verdicts.ts: the last good logical cluster the controller recorded in the
// dep-ctrl workspace) stands in for a read that failed transiently. A process keeps its own last good answer in the
// resolver; this one survives restarts, so a replica that starts while workspace reads fail keeps protecting what
// was protected instead of finding "no rules".
import type { LogicalClusterName, WorkspacePath } from "../api/types.ts";
import type { Resolution } from "./workspaces.ts";

export function orStored(fresh: Resolution, stored: LogicalClusterName | undefined): Resolution {
  if (fresh.ok || fresh.transient !== true || stored === undefined) return fresh;
  return { ok: true, cluster: stored, stale: `${fresh.reason} (kept the resolution stored in the dep-ctrl workspace)` };
}

/**
 * Resolves every path at once; a read that throws counts as a transient failure, and a transient failure falls back
 * to the path's stored resolution.
 */
export async function resolveWithStored(
  paths: readonly string[],
  resolver: { resolve(path: WorkspacePath): Promise<Resolution> },
  stored: ReadonlyMap<string, LogicalClusterName>,
): Promise<Map<string, Resolution>> {
  const out = new Map<string, Resolution>();
  await Promise.all(
    paths.map(async (path) => {
      let fresh: Resolution;
      try {
        fresh = await resolver.resolve(path as WorkspacePath);
      } catch (err) {
        fresh = { ok: false, transient: true, reason: (err as Error).message };
      }
      out.set(path, orStored(fresh, stored.get(path)));
    }),
  );
  return out;
}
