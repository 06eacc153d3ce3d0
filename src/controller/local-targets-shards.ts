// Which shards a local-targets pass visits. A dependent export's consumers are seen through its virtual workspace on
// each shard, and kcp v0.30.0 lists a shard in an APIExportEndpointSlice only once the export has a binding there: the
// dep-ctrl export's slice alone misses every shard where no provider binds it, and so every consumer there (no
// configuration, and not even counted). So the shards are the union of the dep-ctrl slice's and the platform's Shard
// objects (root, which only the platform writes; src/kcp/shards.ts reads them). A provider's own slice is never the
// source: it writes that status, and the controller's credentials must not go where a tenant points. Pure.
import type { DependentExport } from "./local-targets.ts";

const APIEXPORT_VW = "/services/apiexport/";

/** Where the controller may read root's Shards (the verdict's hint when it may not). */
export const SHARDS_GRANT = "deploy/rbac/workspace-resolution.yaml in root";

/** What root's Shards gave: every shard's virtual-workspace base, or why not (no list has worked yet). */
export type PlatformShards =
  { kind: "listed"; bases: string[] } | { kind: "forbidden" } | { kind: "failed"; message: string };

/** The shards' virtual-workspace bases a pass visits, and why shards without a dep-ctrl binding may be missing. */
export interface ShardsToVisit {
  bases: string[];
  blind?: { kind: "forbidden" } | { kind: "failed"; message: string };
}

/**
 * `https://host[:port][/prefix]` of a shard's virtual-workspace server: origin and path without a trailing `/` (kcp
 * joins the export's path to it: `path.Join(<its path>, "/services/apiexport/<cluster>/<export>")`), so the slice's
 * URL and the Shard's give one string. Undefined for anything but https without user info, query or fragment.
 */
export function virtualWorkspaceBase(url: unknown): string | undefined {
  if (typeof url !== "string" || /[?#]/.test(url)) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== "https:" || u.username !== "" || u.password !== "") return undefined;
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

/** The shard base of one of the dep-ctrl export's endpoints (`<base>/services/apiexport/...`). */
export function baseOfEndpoint(depCtrlEndpoint: string): string | undefined {
  const at = depCtrlEndpoint.indexOf(APIEXPORT_VW);
  return at < 0 ? undefined : virtualWorkspaceBase(depCtrlEndpoint.slice(0, at));
}

/** `<shard base>/services/apiexport/<cluster>/<export>`: where kcp serves that export on that shard. */
export function exportEndpoint(base: string, e: DependentExport): string {
  return `${base}${APIEXPORT_VW}${e.cluster}/${e.exportName}`;
}

/**
 * The dep-ctrl slice's shards and the platform's, each once, sorted. Without the platform's (not given, forbidden,
 * or not listed yet) the slice's alone, as before, and the verdict says what may be missing.
 */
export function shardsToVisit(depCtrlEndpoints: readonly string[], platform?: PlatformShards): ShardsToVisit {
  const bases = new Set<string>();
  for (const endpoint of depCtrlEndpoints) {
    const base = baseOfEndpoint(endpoint);
    if (base !== undefined) bases.add(base);
  }
  if (platform?.kind === "listed") for (const base of platform.bases) bases.add(base);
  const sorted = [...bases].sort();
  if (platform === undefined || platform.kind === "listed") return { bases: sorted };
  return { bases: sorted, blind: platform };
}

/** The words a rule's LocalTargetsProtected message adds when shards without a dep-ctrl binding may be missing. */
export function blindNote(blind: ShardsToVisit["blind"]): string {
  if (!blind) return "";
  const why =
    blind.kind === "forbidden"
      ? `grant the controller list on shards (${SHARDS_GRANT})`
      : `the platform's shards could not be listed (${blind.message})`;
  return `; consumers on shards where no provider binds the dep-ctrl export are not seen: ${why}`;
}
