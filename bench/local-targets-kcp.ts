// What the local-targets benchmark (bench/local-targets.ts) plays instead of kcp: one dependent export's consumer
// workspaces and the configurations in them, as the export's virtual workspace shows and takes them. Pure and small:
// the controller's planner is the code under test, so this only does what kcp v0.30.0 was seen to do
// (docs/architecture.md, "Local targets"): a write in a consumer that did not accept the claim is refused (403), a
// create of a name that exists is refused (409), and the list shows configurations only in consumers that accepted.
// Stored objects carry what the API server adds (uid, resourceVersion, the cluster annotation, webhook defaults), so
// the planner diffs against what kcp answers, not against its own output.
import type { Action, ExistingConfiguration } from "../src/controller/actions.ts";
import type { ValidatingWebhookConfiguration } from "../src/controller/desired.ts";
import type { ExportView } from "../src/controller/local-targets.ts";
import { CLUSTER_ANNOTATION, type LogicalClusterName } from "../src/api/types.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../src/api/wire.ts";
import { VWC_CLAIM } from "../src/controller/local-targets.ts";
import type { ClusterClient } from "../src/controller/writer.ts";
import { ApiError, type RequestOptions } from "../src/kcp/rest.ts";

export interface ApplyCounts {
  create: number;
  update: number;
  delete: number;
  /** Writes kcp refused: a consumer that did not accept the claim (403), a create of an existing name (409). */
  refused: number;
}

/** kcp v0.30.0's answer (its Status message) from a deleted export's virtual workspace. */
const EXPORT_NOT_FOUND =
  'Internal Server Error: "/services/apiexport/p/vault.test.io/clusters/*/apis/apis.kcp.io/v1alpha2/apibindings": ' +
  'API export not found: apiexport.apis.kcp.io "vault.test.io" not found';

export class ExportConsumers {
  /** consumer logical cluster → whether it accepted the validatingwebhookconfigurations claim. */
  readonly consumers = new Map<LogicalClusterName, boolean>();
  /** consumer → name → the configuration as stored (JSON text, as a list returns it). */
  private readonly stored = new Map<LogicalClusterName, Map<string, string>>();
  private version = 1;
  /** The export, or the provider's grant on it, is gone: its virtual workspace answers 403 to everything. */
  gone = false;
  /**
   * The export is deleted: kcp v0.30.0's virtual workspace answers 500 "API export not found" to everything (seen on
   * kcp by bench/lt-kcp.ts).
   */
  exportDeleted = false;

  /** The view one pass reads: every binding, and our configurations where the claim is accepted (parsed afresh). */
  view(): ExportView {
    const existing: ExistingConfiguration[] = [];
    for (const [cluster, objects] of this.stored) {
      if (!this.consumers.get(cluster)) continue;
      for (const text of objects.values())
        existing.push({ cluster, object: JSON.parse(text) as ValidatingWebhookConfiguration });
    }
    return { consumers: this.consumers, existing, claimed: true };
  }

  /** Configurations stored in `cluster`, seen through the view or not (a consumer that declined keeps its own). */
  count(cluster?: LogicalClusterName): number {
    if (cluster) return this.stored.get(cluster)?.size ?? 0;
    return [...this.stored.values()].reduce((n, m) => n + m.size, 0);
  }

  apply(actions: readonly Action[]): ApplyCounts {
    const counts: ApplyCounts = { create: 0, update: 0, delete: 0, refused: 0 };
    for (const a of actions) {
      const objects = this.stored.get(a.cluster) ?? new Map<string, string>();
      const name = a.kind === "delete" ? a.name : a.object.metadata.name;
      if (!this.consumers.get(a.cluster) || (a.kind === "create") === objects.has(name)) {
        counts.refused++;
        continue;
      }
      if (a.kind === "delete") objects.delete(name);
      else objects.set(name, JSON.stringify(this.asStored(a.cluster, a.object)));
      this.stored.set(a.cluster, objects);
      counts[a.kind]++;
    }
    return counts;
  }

  /**
   * The export's virtual workspace as the controller's REST client sees it (local-targets-sync.ts), for `*` (the
   * lists) or one consumer (the writes): the same rules as `view` and `apply`, refusals as kcp's status codes.
   */
  client(cluster: LogicalClusterName | "*"): ClusterClient {
    return {
      request: <T>(method: string, path: string, opts?: RequestOptions): Promise<T> => {
        const fail = (status: number) => Promise.reject(new ApiError(method, path, status, "", "refused"));
        if (this.gone) return fail(403);
        if (this.exportDeleted)
          return Promise.reject(new ApiError(method, path, 500, "Internal Server Error", EXPORT_NOT_FOUND));
        if (cluster === "*" && method === "GET") return Promise.resolve(this.page(this.list(path), opts?.query) as T);
        if (cluster === "*") return fail(405);
        const name = path.slice(WEBHOOK_CONFIGURATIONS_PATH.length + 1);
        const object = opts?.body as ValidatingWebhookConfiguration;
        const action: Action =
          method === "POST"
            ? { kind: "create", cluster, object, reason: "" }
            : method === "PUT"
              ? { kind: "update", cluster, object, reason: "" }
              : { kind: "delete", cluster, name, reason: "" };
        const exists = this.stored.get(cluster)?.has(action.kind === "delete" ? name : object.metadata.name) ?? false;
        if (this.apply([action]).refused === 0) return Promise.resolve({} as T);
        return fail(!this.consumers.get(cluster) ? 403 : exists ? 409 : 404);
      },
    };
  }

  /** The most items one list answer held (a client that pages asks for `limit` at a time). */
  largestAnswer = 0;

  /** `limit`/`continue` as the API server pages a list (here the continue token is the next offset). */
  private page(
    items: unknown[],
    query: RequestOptions["query"],
  ): { metadata: { continue?: string }; items: unknown[] } {
    const from = Number(query?.["continue"] ?? 0);
    const limit = Number(query?.["limit"] ?? 0) || items.length;
    const answer = items.slice(from, from + limit);
    this.largestAnswer = Math.max(this.largestAnswer, answer.length);
    return { metadata: from + limit < items.length ? { continue: String(from + limit) } : {}, items: answer };
  }

  private list(path: string): unknown[] {
    if (path.startsWith(WEBHOOK_CONFIGURATIONS_PATH)) return this.view().existing.map((e) => e.object);
    const items = [...this.consumers].map(([cluster, accepted]) => ({
      metadata: { annotations: { [CLUSTER_ANNOTATION]: cluster } },
      spec: { permissionClaims: [{ ...VWC_CLAIM, state: accepted ? "Accepted" : "Rejected" }] },
      status: { exportPermissionClaims: [VWC_CLAIM] },
    }));
    return items;
  }

  private asStored(cluster: LogicalClusterName, o: ValidatingWebhookConfiguration): ValidatingWebhookConfiguration {
    const v = this.version++;
    const metadata = {
      ...o.metadata,
      uid: o.metadata.uid ?? `uid-${cluster}-${v}`,
      resourceVersion: String(v),
      annotations: { ...o.metadata.annotations, [CLUSTER_ANNOTATION]: cluster },
    };
    const webhooks = o.webhooks?.map((w) => ({
      matchPolicy: "Equivalent",
      namespaceSelector: {},
      objectSelector: {},
      timeoutSeconds: 10,
      ...w,
    }));
    return { ...o, metadata, ...(webhooks ? { webhooks } : {}) };
  }
}
