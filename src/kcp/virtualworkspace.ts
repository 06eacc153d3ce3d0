// Discovery of an APIExport's virtual workspace: its APIExportEndpointSlice lists one URL per shard that has a
// binding to the export, and that list grows as shards gain bindings. ExportWatch keeps an Informer of one resource
// (e.g. DependencyRules) running across exactly the current URLs, reading `<url>/clusters/*/<resourcePath>`. Which
// URLs of a slice a tenant can write may be followed is endpoint-origins.ts's decision (ExportWatchOptions.select).
import type { Logger } from "pino";
import {
  endpointUrls,
  refusalText,
  slicesForExport,
  type APIExportEndpointSlice,
  type EndpointSelection,
  type RefusedEndpoint,
} from "./endpoint-origins.ts";
import { Informer, type EndpointStore, type KubeObject } from "./informer.ts";
import type { RestClient } from "./rest.ts";

export { endpointUrls, slicesForExport, type APIExportEndpointSlice } from "./endpoint-origins.ts";

export const ENDPOINT_SLICES_PATH = "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices";

export class NoEndpointSliceError extends Error {
  override name = "NoEndpointSliceError";
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
  /**
   * Which slice URLs to follow, and which are refused (endpoint-origins.ts's selectEndpoints). Without it every URL of
   * the slices naming the export is followed: only for the dep-ctrl export, whose workspace only its admins write.
   */
  select?: (slices: readonly APIExportEndpointSlice[]) => EndpointSelection;
  /** Told of each URL as it comes to be refused (once, however often the slices are looked at again meanwhile). */
  onRefused?: (refused: RefusedEndpoint) => void;
}

/**
 * Refused URLs named one by one in `failing()` and the log per look; a slice can list thousands, which must not flood
 * the log or the index's health. The rest are counted in one line (and each in the metric, through onRefused).
 */
export const MAX_REFUSALS_NAMED = 8;

export const EXPORT_WATCH_TIMEOUT_SECONDS = 60;
export const EXPORT_WATCHDOG_MARGIN_SECONDS = 15;

export class ExportWatch<T extends KubeObject, R = T> {
  private readonly slices: Informer<APIExportEndpointSlice>;
  private readonly objects: Informer<T, R>;
  private readonly opts: ExportWatchOptions<T, R>;
  /** Undefined until the slice's first list, so an export with no endpoints yet still reports "synced". */
  private lastUrls: string | undefined;
  /** The slice URLs refused at the last look, by `<slice> <url> <reason>`; they count as failing. */
  private refused = new Map<string, RefusedEndpoint>();
  private lastIgnored = "";
  /** The selection the followed endpoints come from, made at the last look (undefined before the first). */
  private current: EndpointSelection | undefined;

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
      onChange: () => this.refresh(),
    });
  }

  start(): void {
    this.slices.setEndpoints([this.opts.exportWorkspace.baseUrl]);
  }

  /** Looks at the slices again, e.g. once more shard origins are known or a slice's path has been resolved. */
  refresh(): void {
    if (!this.slices.hasSynced()) return;
    const selection = this.selection();
    const pendingChanged = selection.pending !== this.current?.pending;
    this.current = selection;
    const refusalsChanged = this.noteRefusals(selection);
    const ignored = selection.ignored.join(" ");
    if (ignored !== this.lastIgnored && selection.ignored.length > 0)
      this.opts.logger.info({ slices: selection.ignored }, "endpoint slices of another workspace's export ignored");
    this.lastIgnored = ignored;
    const urls = selection.urls;
    const joined = urls.join(" ");
    if (joined === this.lastUrls && !refusalsChanged && !pendingChanged) return;
    if (joined !== this.lastUrls) {
      this.lastUrls = joined;
      const log = this.opts.logger;
      log.info({ endpoints: urls }, urls.length ? "virtual workspace endpoints changed" : NO_ENDPOINTS_HINT);
      this.objects.setEndpoints(urls);
      this.opts.onEndpoints?.(urls);
    }
    this.opts.onChange();
  }

  private selection(): EndpointSelection {
    const slices = this.slices.list();
    if (this.opts.select) return this.opts.select(slices);
    return { urls: endpointUrls(slices, this.opts.exportName), refused: [], ignored: [], pending: false };
  }

  /** Logs and reports each newly refused URL; true when the refused set changed. */
  private noteRefusals(selection: EndpointSelection): boolean {
    const next = new Map(selection.refused.map((r) => [`${r.slice} ${r.url} ${r.reason}`, r]));
    let fresh = 0;
    for (const [key, r] of next) {
      if (this.refused.has(key)) continue;
      if (fresh++ < MAX_REFUSALS_NAMED) {
        const fields = { slice: r.slice, url: r.url.slice(0, 1024), reason: r.reason };
        this.opts.logger.warn(fields, refusalText(r.slice, r.url, r.reason));
      }
      this.opts.onRefused?.(r);
    }
    if (fresh > MAX_REFUSALS_NAMED)
      this.opts.logger.warn({ more: fresh - MAX_REFUSALS_NAMED }, "more virtual workspace URLs refused");
    const changed = fresh > 0 || next.size !== this.refused.size;
    this.refused = next;
    return changed;
  }

  /** True once the endpoint slice and every endpoint's first list are in. */
  hasSynced(): boolean {
    return this.slices.hasSynced() && this.objects.hasSynced() && this.endpointsCurrent();
  }

  /**
   * The followed endpoints are those the slices name now, and no slice's path is still being resolved. Every change
   * of the slices, the origins or a path's resolution looks again at once, so the last look is current; it is kept
   * rather than made again here, since each DELETE's lookup asks (and a tenant's slice may list many URLs).
   */
  private endpointsCurrent(): boolean {
    return this.current !== undefined && !this.current.pending && this.lastUrls === this.current.urls.join(" ");
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
    return this.slices.hasSynced() && this.slices.failing().length === 0 && this.endpointsCurrent();
  }

  /** What is failing now: the endpoint slice's list/watch, a slice URL refused, or an endpoint's list/watch. */
  failing(): { endpoint: string; error: string }[] {
    const all = [...this.refused.values()];
    const refused = all.slice(0, MAX_REFUSALS_NAMED).map((r) => ({
      endpoint: r.url.slice(0, 256),
      error: refusalText(r.slice, r.url, r.reason),
    }));
    if (all.length > MAX_REFUSALS_NAMED) {
      const more = all.length - MAX_REFUSALS_NAMED;
      refused.push({ endpoint: "", error: `${more} more virtual workspace URLs of APIExportEndpointSlices refused` });
    }
    return [...this.slices.failing(), ...refused, ...this.objects.failing()];
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
