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

export interface ApplyCounts {
  create: number;
  update: number;
  delete: number;
  /** Writes kcp refused: a consumer that did not accept the claim (403), a create of an existing name (409). */
  refused: number;
}

export class ExportConsumers {
  /** consumer logical cluster → whether it accepted the validatingwebhookconfigurations claim. */
  readonly consumers = new Map<LogicalClusterName, boolean>();
  /** consumer → name → the configuration as stored (JSON text, as a list returns it). */
  private readonly stored = new Map<LogicalClusterName, Map<string, string>>();
  private version = 1;

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
