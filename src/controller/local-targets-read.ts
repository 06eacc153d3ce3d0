// What a local-targets pass reads of one dependent export (local-targets-sync.ts does the rest): through its virtual
// workspace on each shard, its bindings (which consumers accepted the validatingwebhookconfigurations claim) and our
// configurations in those consumers. Both are listed a page at a time and each page is reduced to what the pass
// needs, so the controller never parses an export's whole list at once: read whole, 1,000 consumers' bindings (kcp
// answers a few KiB each) and configurations grew its RSS by 60 MiB, and past 16 MiB a list would not be read at all
// (bench/local-targets-heap.ts measures it). A page over the byte cap is asked for again smaller (listPagesWith).
import { CLUSTER_ANNOTATION, type LogicalClusterName } from "../api/types.ts";
import { parseLogicalClusterName, WEBHOOK_CONFIGURATIONS_PATH } from "../api/wire.ts";
import { isApiError, listPagesWith } from "../kcp/rest.ts";
import { differences, type ExistingConfiguration } from "./actions.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";
import {
  acceptedWebhookClaim,
  exportGone,
  exportId,
  LOCAL_TARGETS_LABEL,
  VWC_CLAIM,
  type DependentExport,
  type ExportBinding,
  type ExportView,
  type LocalCoverage,
} from "./local-targets.ts";
import { exportEndpoint, type ShardsToVisit } from "./local-targets-shards.ts";
import type { LocalTargetsDeps } from "./local-targets-sync.ts";
import type { ClusterClient } from "./writer.ts";

export const APIBINDINGS = "/apis/apis.kcp.io/v1alpha2/apibindings";

/** Items asked for per list page: about 250 KiB of kcp's bindings or configurations. */
export const LIST_PAGE = 100;

/** What a pass read of one export: the view and the endpoint (shard) serving each consumer, or why not. */
export type Read = { view: ExportView; endpointOf: Map<LogicalClusterName, string> } | LocalCoverage;

interface Binding extends ExportBinding {
  status?: { exportPermissionClaims?: { group?: string; resource?: string }[] };
}

const pagesOf = <T>(client: ClusterClient, path: string, onItem: (item: T) => void, query?: Record<string, string>) =>
  listPagesWith<T>(
    (method, p, opts) => client.request(method, p, opts),
    path,
    (page) => page.items.forEach(onItem),
    { limit: LIST_PAGE, ...(query ? { query } : {}) },
  );

/** Our configurations there; the export serves the claimed type only once it claims it, so a 404 means none. */
async function eachOfOurs(all: ClusterClient, e: DependentExport, onItem: (o: ValidatingWebhookConfiguration) => void) {
  try {
    await pagesOf(all, WEBHOOK_CONFIGURATIONS_PATH, onItem, { labelSelector: `${LOCAL_TARGETS_LABEL}=${exportId(e)}` });
  } catch (err) {
    if (!isApiError(err, 404)) throw err;
  }
}

/**
 * A listed configuration as a pass keeps it until its writes are planned: its metadata without kcp's managedFields
 * (most of its size, never compared), and, where it already is as wanted (every consumer in a steady state), the
 * wanted configuration's webhooks instead of its own copy, so a thousand consumers do not hold a thousand parsed
 * copies of one configuration through the pass. What the diff (planActions) reads of it is unchanged.
 */
function asKept(
  object: ValidatingWebhookConfiguration,
  want: ValidatingWebhookConfiguration | undefined,
): ValidatingWebhookConfiguration {
  const { managedFields: _, ...metadata } = object.metadata as ValidatingWebhookConfiguration["metadata"] & {
    managedFields?: unknown;
  };
  if (want && differences(object, want).length === 0) return { ...want, metadata };
  return { ...object, metadata };
}

/** One export's bindings and configurations on every shard; `want` (none when pruning) only decides what is kept. */
export async function readExport(
  deps: Pick<LocalTargetsDeps, "clientFor" | "metrics" | "logger">,
  e: DependentExport,
  shards: ShardsToVisit,
  want: ValidatingWebhookConfiguration | undefined,
): Promise<Read> {
  const consumers = new Map<LogicalClusterName, boolean>();
  const existing: ExistingConfiguration[] = [];
  const endpointOf = new Map<LogicalClusterName, string>();
  let claimed = false;
  const onBinding = (endpoint: string) => (b: Binding) => {
    const cluster = parseLogicalClusterName(b.metadata.annotations?.[CLUSTER_ANNOTATION]);
    if (!cluster) return;
    consumers.set(cluster, acceptedWebhookClaim(b));
    endpointOf.set(cluster, endpoint);
    claimed ||= (b.status?.exportPermissionClaims ?? []).some(
      (c) => (c.group ?? "") === VWC_CLAIM.group && c.resource === VWC_CLAIM.resource,
    );
  };
  for (const endpoint of shards.bases.map((base) => exportEndpoint(base, e))) {
    const all = deps.clientFor(endpoint, "*" as LogicalClusterName);
    try {
      await pagesOf(all, APIBINDINGS, onBinding(endpoint));
      await eachOfOurs(all, e, (object) => {
        const cluster = parseLogicalClusterName(object.metadata.annotations?.[CLUSTER_ANNOTATION]);
        if (cluster) existing.push({ cluster, object: asKept(object, want) });
      });
    } catch (err) {
      deps.metrics.errors.inc({ reason: "local_targets_read" });
      deps.logger.warn({ export: `${e.cluster}/${e.exportName}`, err: String(err) }, "cannot read local targets");
      const gone = isApiError(err) && exportGone(err.status, err.statusMessage);
      const message = isApiError(err) ? `${err.status}` : "";
      return { kind: "unreadable", forbidden: isApiError(err, 403), message, gone };
    }
  }
  return { view: { consumers, existing, claimed, ...(shards.blind ? { blind: shards.blind } : {}) }, endpointOf };
}
