// Discovery of an APIExport's virtual workspace: its APIExportEndpointSlice lists one URL per shard that has a
// binding to the export, and that list grows as shards gain bindings. ExportWatch keeps an Informer of one resource
// (e.g. DependencyRules) running across exactly the current URLs, reading `<url>/clusters/*/<resourcePath>`.
import type { Logger } from "pino";
import type { ObjectMeta } from "../api/types.ts";
import { Informer, type EndpointStore, type KubeObject } from "./informer.ts";
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

export interface ExportWatchOptions<T = unknown, R = T> {
  /** A fresh store for one endpoint's objects (see Informer); whole objects when not given. */
  newStore?: () => EndpointStore<T, R>;
  /** Objects per list page. */
  pageSize?: number;
  /** Client rooted at the export's workspace (`<base>/clusters/<dep-ctrl>`). */
  exportWorkspace: RestClient;
  exportName: string;
  /** Resource path below `<vw url>/clusters/*`, e.g. `/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`. */
  resourcePath: string;
  logger: Logger;
  onChange: () => void;
  /** Told every time the set of endpoints changes, so other informers can follow the same shards from the start. */
  onEndpoints?: (urls: string[]) => void;
  /**
   * Server-side watch timeout and watchdog margin of each endpoint's watch (see Informer). Shorter than the
   * Informer's default (300 s + 30 s) so a shard that goes silent (stopped, partitioned) shows in `failing()` within
   * about a minute and a quarter, not five and a half; a watch reopened from its resourceVersion each minute costs
   * next to nothing.
   */
  watchTimeoutSeconds?: number;
  watchdogMarginSeconds?: number;
}

export const EXPORT_WATCH_TIMEOUT_SECONDS = 60;
export const EXPORT_WATCHDOG_MARGIN_SECONDS = 15;

export class ExportWatch<T extends KubeObject, R = T> {
  private readonly slices: Informer<APIExportEndpointSlice>;
  private readonly objects: Informer<T, R>;
  private readonly opts: ExportWatchOptions<T, R>;
  /** Undefined until the slice's first list, so an export with no endpoints yet still reports "synced". */
  private lastUrls: string | undefined;

  constructor(opts: ExportWatchOptions<T, R>) {
    this.opts = opts;
    this.objects = new Informer<T, R>({
      ...(opts.newStore ? { newStore: opts.newStore } : {}),
      ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
      client: opts.exportWorkspace,
      path: `/clusters/*${opts.resourcePath}`,
      watchTimeoutSeconds: opts.watchTimeoutSeconds ?? EXPORT_WATCH_TIMEOUT_SECONDS,
      watchdogMarginSeconds: opts.watchdogMarginSeconds ?? EXPORT_WATCHDOG_MARGIN_SECONDS,
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

  list(): R[] {
    return this.objects.list();
  }

  /** The stores of the endpoints that have listed (see Informer.syncedStores). */
  syncedStores(): EndpointStore<T, R>[] {
    return this.objects.syncedStores();
  }

  /** Each endpoint's store and state (see Informer.endpointStates). */
  endpointStates(): ReturnType<Informer<T, R>["endpointStates"]> {
    return this.objects.endpointStates();
  }

  /** True when the endpoint list is known and current: the slice listed, its watch healthy, the endpoints set. */
  endpointsKnown(): boolean {
    return this.slices.hasSynced() && this.slices.failing().length === 0 && this.lastUrls === this.currentUrls();
  }

  /** What is failing now: the endpoint slice's list/watch, or an endpoint's. */
  failing(): { endpoint: string; error: string }[] {
    return [...this.slices.failing(), ...this.objects.failing()];
  }

  /** Each object with the virtual workspace endpoint (shard) it was listed from. */
  listWithEndpoints(): { endpoint: string; object: R }[] {
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
