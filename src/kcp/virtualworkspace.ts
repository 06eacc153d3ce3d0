// Discovery of an APIExport's virtual workspace: its APIExportEndpointSlice lists one URL per shard that has a
// binding to the export, and that list grows as shards gain bindings. ExportWatch keeps an Informer of one resource
// (e.g. DependencyRules) running across exactly the current URLs, reading `<url>/clusters/*/<resourcePath>`.
import type { Logger } from "pino";
import type { ObjectMeta } from "../api/types.ts";
import { Informer, type KubeObject } from "./informer.ts";
import type { RestClient } from "./rest.ts";

export const ENDPOINT_SLICES_PATH = "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices";

export interface APIExportEndpointSlice {
  metadata: ObjectMeta;
  spec: { export: { path?: string; name: string } };
  status?: { endpoints?: { url: string }[] };
}

export class NoEndpointSliceError extends Error {
  override name = "NoEndpointSliceError";
}

/** Slices in the export's own workspace that point at the export (by name; a path, if set, is this workspace). */
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

/**
 * Checks at startup that the export has an endpoint slice in `exportWorkspace`, with errors that say what to do.
 * Returns the current URLs (possibly none: no provider has bound the export yet).
 */
export async function checkEndpointSlice(
  exportWorkspace: RestClient,
  exportName: string,
  workspaceLabel: string,
): Promise<string[]> {
  const list = await exportWorkspace.listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
  if (slicesForExport(list.items, exportName).length === 0) {
    throw new NoEndpointSliceError(
      `no APIExportEndpointSlice for APIExport "${exportName}" in workspace ${workspaceLabel}: ` +
        `apply the manifests in deploy/kcp/ there (kcp creates the slice with the export), ` +
        `and check --api-export-name`,
    );
  }
  return endpointUrls(list.items, exportName);
}

export const NO_ENDPOINTS_HINT =
  "the APIExport has no virtual workspace endpoints yet: a provider workspace must bind it " +
  "(APIBinding with the validatingwebhookconfigurations claim accepted) before rules can be served";

export interface ExportWatchOptions {
  /** Client rooted at the export's workspace (`<base>/clusters/<dep-ctrl>`). */
  exportWorkspace: RestClient;
  exportName: string;
  /** Resource path below `<vw url>/clusters/*`, e.g. `/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`. */
  resourcePath: string;
  logger: Logger;
  onChange: () => void;
  /** Told every time the set of endpoints changes, so other informers can follow the same shards from the start. */
  onEndpoints?: (urls: string[]) => void;
}

export class ExportWatch<T extends KubeObject> {
  private readonly slices: Informer<APIExportEndpointSlice>;
  private readonly objects: Informer<T>;
  private readonly opts: ExportWatchOptions;
  /** Undefined until the slice's first list, so an export with no endpoints yet still reports "synced". */
  private lastUrls: string | undefined;

  constructor(opts: ExportWatchOptions) {
    this.opts = opts;
    this.objects = new Informer<T>({
      client: opts.exportWorkspace,
      path: `/clusters/*${opts.resourcePath}`,
      logger: opts.logger.child({ informer: opts.resourcePath }),
      onChange: opts.onChange,
    });
    this.slices = new Informer<APIExportEndpointSlice>({
      client: opts.exportWorkspace,
      path: ENDPOINT_SLICES_PATH,
      logger: opts.logger.child({ informer: "apiexportendpointslices" }),
      onChange: () => this.onSlicesChanged(),
    });
  }

  start(): void {
    this.slices.setEndpoints([this.opts.exportWorkspace.baseUrl]);
  }

  private onSlicesChanged(): void {
    if (!this.slices.hasSynced()) return;
    const urls = endpointUrls(this.slices.list(), this.opts.exportName);
    const joined = urls.join(" ");
    if (joined === this.lastUrls) return;
    this.lastUrls = joined;
    this.opts.logger.info({ endpoints: urls }, urls.length ? "virtual workspace endpoints changed" : NO_ENDPOINTS_HINT);
    this.objects.setEndpoints(urls);
    this.opts.onEndpoints?.(urls);
    this.opts.onChange();
  }

  /** True once the endpoint slice and every endpoint's first list are in. */
  hasSynced(): boolean {
    return this.slices.hasSynced() && this.objects.hasSynced() && this.lastUrls === this.currentUrls();
  }

  private currentUrls(): string {
    return endpointUrls(this.slices.list(), this.opts.exportName).join(" ");
  }

  endpoints(): string[] {
    return this.objects.endpoints();
  }

  list(): T[] {
    return this.objects.list();
  }

  /** Each object with the virtual workspace endpoint (shard) it was listed from. */
  listWithEndpoints(): { endpoint: string; object: T }[] {
    return this.objects.listWithEndpoints();
  }

  /** A client for one logical cluster through the virtual workspace endpoint that serves it. */
  clientFor(endpointUrl: string, cluster: string): RestClient {
    return this.opts.exportWorkspace.withBase(`${endpointUrl}/clusters/${cluster}`);
  }

  stop(): void {
    this.slices.stop();
    this.objects.stop();
  }
}
