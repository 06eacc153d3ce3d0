// Which virtual workspace URLs an index watch follows. The watch of a dependent type reads the APIExportEndpointSlices
// of the provider's own workspace, which that provider writes (kcp.md §9), and connects to the URLs there with the
// webhook's credentials. So it follows only what src/kcp/endpoint-origins.ts allows for the export: https, a known
// shard's virtual-workspace origin, the exact `/services/apiexport/<cluster>/<name>` path; and only from slices whose
// spec.export.path is the export's own workspace. Every URL refused is counted by reason, logged with the URL, and
// makes the type's health failing (its DELETEs get 503 where the index cannot answer; the rule's status says failing).
import { Counter, type Registry } from "prom-client";
import type { LogicalClusterName, WorkspacePath } from "../../../api/types.ts";
import { parseWorkspacePath } from "../../../api/wire.ts";
import {
  ENDPOINT_REFUSALS,
  selectEndpoints,
  VirtualWorkspaceOrigins,
  type APIExportEndpointSlice,
  type EndpointRefusal,
  type EndpointSelection,
  type ExportRef,
  type RefusedEndpoint,
  type SlicePlace,
} from "../../../kcp/endpoint-origins.ts";
import type { Resolution } from "../../../kcp/workspaces.ts";

/** What every index watch shares: the known origins, path resolution, and the refusal counter. */
export interface IndexEndpointPolicy {
  origins: VirtualWorkspaceOrigins;
  /** Resolves a workspace path to its logical cluster (the webhook's WorkspaceResolver). */
  resolve: (path: WorkspacePath) => Promise<Resolution>;
  onRefused?: (reason: EndpointRefusal) => void;
}

/**
 * The webhook's policy: the operator's origins and those of the dep-ctrl export's endpoints (`depCtrlUrls` now; the
 * rule watch tells `origins.learn` of later ones), paths resolved by the webhook's resolver, refusals counted.
 */
export function indexEndpointPolicy(
  configured: readonly string[] | undefined,
  depCtrlUrls: readonly string[],
  resolver: { resolve: IndexEndpointPolicy["resolve"] },
  registry: Registry,
): IndexEndpointPolicy {
  const origins = new VirtualWorkspaceOrigins(configured);
  origins.learn(depCtrlUrls);
  return { origins, resolve: (path) => resolver.resolve(path), onRefused: endpointRefusalCounter(registry) };
}

/** Slice paths a watch resolves; past this many, a slice's URLs are checked as the export's own without resolving. */
export const MAX_RESOLVED_SLICE_PATHS = 64;

/**
 * Where each slice's spec.export.path points, for one export. kcp writes the export's workspace path there when it
 * creates the slice; a tenant may create slices naming another workspace's export of the same name. A path is
 * resolved to its logical cluster; until then the slice is pending (the endpoint list is not known yet). When it
 * cannot be resolved (no permission, kcp unreachable), the slice's URLs are checked as the export's own, which is
 * safe: only URLs at this export's own virtual-workspace path pass.
 */
export class SlicePlaces {
  private readonly cluster: LogicalClusterName;
  private readonly resolve: (path: WorkspacePath) => Promise<Resolution>;
  private readonly onSettled: () => void;
  private readonly places = new Map<string, SlicePlace | "unknown">();
  private readonly inFlight = new Set<string>();

  constructor(cluster: LogicalClusterName, resolve: IndexEndpointPolicy["resolve"], onSettled: () => void) {
    this.cluster = cluster;
    this.resolve = resolve;
    this.onSettled = onSettled;
  }

  place(text: string): SlicePlace {
    const path = parseWorkspacePath(text);
    if (path === undefined) return "other"; // neither a path nor this export's cluster: no workspace of this export
    const known = this.places.get(path);
    if (known === "own" || known === "other") return known;
    if (known === undefined && this.places.size >= MAX_RESOLVED_SLICE_PATHS) return "own";
    if (!this.inFlight.has(path)) this.lookUp(path);
    return known === "unknown" ? "own" : "pending";
  }

  private lookUp(path: WorkspacePath): void {
    if (!this.places.has(path)) this.places.set(path, "pending");
    this.inFlight.add(path);
    const settle = (next: SlicePlace | "unknown"): void => {
      this.inFlight.delete(path);
      const before = this.places.get(path);
      this.places.set(path, next);
      if (before !== next) this.onSettled();
    };
    this.resolve(path).then(
      (r) => settle(r.ok ? (r.cluster === this.cluster ? "own" : "other") : r.transient ? "unknown" : "other"),
      () => settle("unknown"),
    );
  }
}

/** What one index watch gets: the selection of its URLs, the refusal hook, and how to hear of new origins. */
export interface WatchEndpoints {
  select: (slices: readonly APIExportEndpointSlice[]) => EndpointSelection;
  onRefused: (refused: RefusedEndpoint) => void;
  /** `look` is called when the answer may have changed: an origin was learnt or a slice's path resolved. */
  start(look: () => void): void;
  stop(): void;
}

export function watchEndpoints(policy: IndexEndpointPolicy, exp: ExportRef & { cluster: LogicalClusterName }) {
  let look = (): void => undefined;
  let unsubscribe = (): void => undefined;
  const places = new SlicePlaces(exp.cluster, policy.resolve, () => look());
  const endpoints: WatchEndpoints = {
    select: (slices) => selectEndpoints(slices, exp, policy.origins.current(), (path) => places.place(path)),
    onRefused: (r) => policy.onRefused?.(r.reason),
    start(fn) {
      look = fn;
      unsubscribe = policy.origins.subscribe(fn);
    },
    stop() {
      unsubscribe();
      look = () => undefined;
    },
  };
  return endpoints;
}

/** `dependency_webhook_index_endpoint_refusals_total{reason}`: every slice URL the index refused to follow. */
export function endpointRefusalCounter(registry: Registry): (reason: EndpointRefusal) => void {
  const counter = new Counter({
    name: "dependency_webhook_index_endpoint_refusals_total",
    help: "Virtual workspace URLs in providers' APIExportEndpointSlices the dependents index refused to follow, by reason (not https, user info, query, fragment, unknown-origin: no known shard, wrong-path: not the export's own, unparsable); the type's index is failing meanwhile",
    labelNames: ["reason"],
    registers: [registry],
  });
  for (const reason of ENDPOINT_REFUSALS) counter.inc({ reason }, 0);
  return (reason) => counter.inc({ reason });
}
