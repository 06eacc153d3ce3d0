// Which APIExport virtual-workspace URLs may be followed. A provider tenant writes the APIExportEndpointSlices of its
// own workspace (the spec when it creates one, the status at will: kcp.md §9), and a watch follows the URLs listed
// there with the binary's own credentials (bearer token or client certificate). So a URL from a slice a tenant can
// write is followed only when it is exactly what kcp writes there for that export: https, on the origin of a known
// shard's virtual workspace, at `/services/apiexport/<export's logical cluster>/<export name>`, with no user info,
// query or fragment. Known origins are those of the dep-ctrl export's own slice (in the dep-ctrl workspace, which
// only its admins write), kept once seen, and the operator's --virtual-workspace-origins.
//
// Pure but for VirtualWorkspaceOrigins, a set that tells its listeners when it grows.
import type { ObjectMeta } from "../api/types.ts";

/** One APIExportEndpointSlice as listed: the export it names (by path and name) and the URLs in its status. */
export interface APIExportEndpointSlice {
  metadata: ObjectMeta;
  spec: { export: { path?: string; name: string } };
  status?: { endpoints?: { url: string }[] };
}

/**
 * Slices that point at the export by name, whatever their path: only for the dep-ctrl workspace, which only its admins
 * write. The slices of a workspace a tenant writes go through selectEndpoints instead.
 */
export function slicesForExport(
  slices: readonly APIExportEndpointSlice[],
  exportName: string,
): APIExportEndpointSlice[] {
  return slices.filter((s) => s.spec?.export?.name === exportName);
}

/** All distinct virtual workspace URLs of the export, sorted so comparisons are stable. */
export function endpointUrls(slices: readonly APIExportEndpointSlice[], exportName: string): string[] {
  const urls = new Set<string>();
  for (const s of slicesForExport(slices, exportName)) for (const e of s.status?.endpoints ?? []) urls.add(e.url);
  return [...urls].sort();
}

/** Why a slice URL is refused: the metric's label values, a fixed set (never the URL or a workspace). */
export const ENDPOINT_REFUSALS = [
  "unparsable",
  "not-https",
  "userinfo",
  "query",
  "fragment",
  "unknown-origin",
  "wrong-path",
] as const;
export type EndpointRefusal = (typeof ENDPOINT_REFUSALS)[number];

const REFUSAL_TEXT: Record<EndpointRefusal, string> = {
  unparsable: "it is not a URL",
  "not-https": "it is not https",
  userinfo: "it carries user info",
  query: "it carries a query",
  fragment: "it carries a fragment",
  "unknown-origin":
    "its origin is no known shard's virtual workspace (the dep-ctrl export's endpoints, --virtual-workspace-origins)",
  "wrong-path": "its path is not /services/apiexport/<the export's logical cluster>/<export name>",
};

/** The export a slice must serve: the logical cluster of its workspace and its name. */
export interface ExportRef {
  cluster: string;
  name: string;
}

export function exportEndpointPath(exp: ExportRef): string {
  return `/services/apiexport/${exp.cluster}/${exp.name}`;
}

// The URL as written, in parts, before any normalisation (WHATWG parsing resolves `..` and `%2e`, drops an empty query).
const RAW_URL = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/s;

/**
 * The URL to connect to for `exp`, or why `raw` may not be used. The path is compared as written and as parsed, so no
 * encoding (`%2F`, `%2e%2e`), dot segment or trailing slash passes; the URL returned is rebuilt from the parsed origin
 * and the expected path, never the text as written.
 */
export function checkEndpointUrl(
  raw: string,
  exp: ExportRef,
  origins: ReadonlySet<string>,
): { url: string } | { refused: EndpointRefusal } {
  const parts = RAW_URL.exec(raw);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { refused: "unparsable" };
  }
  if (!parts) return { refused: "unparsable" };
  if (u.protocol !== "https:") return { refused: "not-https" };
  if (parts[2]!.includes("@") || u.username !== "" || u.password !== "") return { refused: "userinfo" };
  if (parts[4] !== undefined) return { refused: "query" };
  if (parts[5] !== undefined) return { refused: "fragment" };
  if (!origins.has(u.origin)) return { refused: "unknown-origin" };
  const path = exportEndpointPath(exp);
  if (parts[3] !== path || u.pathname !== path) return { refused: "wrong-path" };
  return { url: `${u.origin}${path}` };
}

/** The text a refusal carries on the index's health (and so the rule's status) and in the log. */
export function refusalText(slice: string, url: string, reason: EndpointRefusal): string {
  const shown = url.length <= 256 ? url : `${url.slice(0, 256)}…(${url.length} chars)`;
  return `virtual workspace URL ${JSON.stringify(shown)} of APIExportEndpointSlice ${slice} refused: ${REFUSAL_TEXT[reason]}`;
}

/** The origin of an https URL without user info; undefined for anything else. */
export function httpsOrigin(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.protocol === "https:" && u.username === "" && u.password === "" ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

/** One --virtual-workspace-origins entry (`https://host[:port]`, a trailing `/` allowed) as an origin; throws why not. */
export function parseOrigin(text: string): string {
  const origin = /^https:\/\/[^/?#@\\\s]+\/?$/i.test(text) ? httpsOrigin(text) : undefined;
  if (origin === undefined)
    throw new Error(`${JSON.stringify(text)} is not an https origin (https://host[:port], no path, user or query)`);
  return origin;
}

/** Where a slice's spec.export.path points: the export's own workspace, another one, or not known yet. */
export type SlicePlace = "own" | "other" | "pending";

export interface RefusedEndpoint {
  slice: string;
  url: string;
  reason: EndpointRefusal;
}

export interface EndpointSelection {
  /** The URLs to follow, distinct and sorted. */
  urls: string[];
  refused: RefusedEndpoint[];
  /** Slices naming an export of this name in another workspace: not this export's, so left alone. */
  ignored: string[];
  /** A slice's path is still being resolved: the endpoint list is not known yet. */
  pending: boolean;
}

/**
 * The endpoints of `exp` from the slices of its workspace. A slice counts when it names the export by name, with no
 * path, the export's logical cluster, or a path `place` says is the export's own workspace (kcp writes the export's
 * workspace path there when it creates the slice); each of its URLs is then checked by checkEndpointUrl.
 */
export function selectEndpoints(
  slices: readonly APIExportEndpointSlice[],
  exp: ExportRef,
  origins: ReadonlySet<string>,
  place: (path: string) => SlicePlace,
): EndpointSelection {
  const urls = new Set<string>();
  const out: EndpointSelection = { urls: [], refused: [], ignored: [], pending: false };
  for (const s of slices) {
    if (s.spec?.export?.name !== exp.name) continue;
    const path = s.spec.export.path ?? "";
    const where = path === "" || path === exp.cluster ? "own" : place(path);
    if (where === "pending") out.pending = true;
    if (where === "other") out.ignored.push(s.metadata.name);
    if (where !== "own") continue;
    for (const e of s.status?.endpoints ?? []) {
      const raw = typeof e?.url === "string" ? e.url : String(e?.url);
      const checked = checkEndpointUrl(raw, exp, origins);
      if ("url" in checked) urls.add(checked.url);
      else out.refused.push({ slice: s.metadata.name, url: raw, reason: checked.refused });
    }
  }
  out.urls = [...urls].sort();
  return out;
}

/**
 * The known shard virtual-workspace origins: the operator's, and those of the dep-ctrl export's own slice URLs, kept
 * once seen (a shard whose last binding went away is still a shard). Listeners hear when the set grows, so a watch
 * that refused a URL on an origin learnt since looks again.
 */
export class VirtualWorkspaceOrigins {
  private readonly origins: Set<string>;
  private readonly listeners = new Set<() => void>();

  constructor(configured: readonly string[] = []) {
    this.origins = new Set(configured);
  }

  /** Adds the https origins of the dep-ctrl export's own slice URLs. */
  learn(urls: readonly string[]): void {
    const before = this.origins.size;
    for (const url of urls) {
      const origin = httpsOrigin(url);
      if (origin !== undefined) this.origins.add(origin);
    }
    if (this.origins.size !== before) for (const fn of [...this.listeners]) fn();
  }

  current(): ReadonlySet<string> {
    return this.origins;
  }

  /** Calls `fn` whenever the set grows; returns how to stop. */
  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
