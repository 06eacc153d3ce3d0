// The provider workspace initializer's I/O: it finds the provider WorkspaceType's initializing-workspaces virtual
// workspace (one URL per shard, in the type's status), watches the LogicalClusters that still carry its initializer,
// reads what each one holds, writes what src/controller/initializer-plan.ts says it lacks, and removes the initializer
// from the LogicalCluster's status when nothing is missing. Requests into the workspace go through that virtual
// workspace, which kcp v0.30.0 forwards as the workspace's owner; the controller itself needs only `initialize` on
// the type (deploy/rbac/provider-initializer.yaml).
import type { Logger } from "pino";
import { CLUSTER_ANNOTATION, type ObjectMeta } from "../api/types.ts";
import { Informer } from "../kcp/informer.ts";
import { isApiError, type RestClient } from "../kcp/rest.ts";
import type { Clock } from "../util/clock.ts";
import { WorkLoop, type PassResult } from "../util/workloop.ts";
import {
  APIBINDINGS_PATH,
  CONSENT_BINDING_PATH,
  CONSENT_ROLE_PATH,
  planInitialization,
  withoutInitializer,
  type InitializerTarget,
  type ObservedBinding,
  type WorkspaceFacts,
} from "./initializer-plan.ts";

const INITIALIZING_WORKSPACES = "/services/initializingworkspaces/";
const LOGICAL_CLUSTERS = "/apis/core.kcp.io/v1alpha1/logicalclusters";
const LOGICAL_CLUSTER = `${LOGICAL_CLUSTERS}/cluster`;
/** How soon a workspace that is still being set up (a write made, a binding not yet Bound) is looked at again. */
const PENDING_REQUEUE_MS = 1_000;

interface LogicalCluster {
  metadata: ObjectMeta;
  status?: { phase?: string; initializers?: string[] } & Record<string, unknown>;
}

interface WorkspaceType {
  metadata: ObjectMeta;
  status?: { virtualWorkspaces?: { url?: string }[] };
}

export interface ProviderInitializerOptions {
  /** Client at kcp's base URL (no /clusters/); its identity needs `initialize` and `get` on the type. */
  base: RestClient;
  /** The WorkspaceType whose initializer this serves: its workspace path and name. */
  workspaceType: { path: string; name: string };
  target: InitializerTarget;
  logger: Logger;
  clock: Clock;
  resyncMs: number;
  /** Only the leader writes; followers keep the watch warm. */
  mayWrite: () => boolean;
}

export class ProviderInitializer {
  private readonly opts: ProviderInitializerOptions;
  private readonly workspaces: Informer<LogicalCluster>;
  private readonly loop: WorkLoop;
  private initializer: string | undefined;

  constructor(opts: ProviderInitializerOptions) {
    this.opts = opts;
    const logger = opts.logger.child({ component: "provider-initializer" });
    this.workspaces = new Informer<LogicalCluster>({
      client: opts.base,
      path: `/clusters/*${LOGICAL_CLUSTERS}`,
      logger: logger.child({ informer: "initializing logicalclusters" }),
      onChange: () => this.loop.enqueue(),
      clock: opts.clock,
    });
    this.loop = new WorkLoop({ pass: () => this.pass(), logger, resyncMs: opts.resyncMs, clock: opts.clock });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.workspaces.stop();
  }

  /** The type's initializer name (`<its logical cluster>:<name>`) and virtual-workspace URLs, read every pass. */
  private async readType(): Promise<{ initializer: string; urls: string[] }> {
    const { path, name } = this.opts.workspaceType;
    const wt = await this.opts.base.get<WorkspaceType>(
      `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspacetypes/${name}`,
    );
    const cluster = wt.metadata.annotations?.[CLUSTER_ANNOTATION];
    if (!cluster) throw new Error(`WorkspaceType ${path}:${name} has no ${CLUSTER_ANNOTATION} annotation`);
    // The status lists the type's terminatingworkspaces URLs too (kcp v0.30.0); only the initializing ones serve this.
    const urls = (wt.status?.virtualWorkspaces ?? []).flatMap((v) =>
      v.url?.includes(INITIALIZING_WORKSPACES) ? [v.url] : [],
    );
    return { initializer: `${cluster}:${name}`, urls };
  }

  private async pass(): Promise<PassResult> {
    const { initializer, urls } = await this.readType();
    if (this.initializer !== initializer) this.opts.logger.info({ initializer, urls }, "serving workspace initializer");
    this.initializer = initializer;
    this.workspaces.setEndpoints(urls);
    if (urls.length === 0 || !this.workspaces.hasSynced()) return { requeueAfterMs: PENDING_REQUEUE_MS };
    if (!this.opts.mayWrite()) return {};
    let pending = false;
    for (const { endpoint, object } of this.workspaces.listWithEndpoints()) {
      const cluster = object.metadata.annotations?.[CLUSTER_ANNOTATION];
      if (!cluster || !object.status?.initializers?.includes(initializer)) continue;
      const ws = this.opts.base.withBase(endpoint).forCluster(cluster);
      try {
        if (!(await this.initialize(ws, cluster, initializer))) pending = true;
      } catch (err) {
        pending = true;
        this.opts.logger.warn({ cluster, err: (err as Error).message }, "initializing workspace failed; retrying");
      }
    }
    return pending ? { requeueAfterMs: PENDING_REQUEUE_MS } : {};
  }

  /** One step for one workspace; true once its initializer is gone. */
  private async initialize(ws: RestClient, cluster: string, initializer: string): Promise<boolean> {
    const plan = planInitialization(await observe(ws, cluster), this.opts.target);
    const log = this.opts.logger.child({ cluster });
    if (plan.kind === "write") {
      for (const w of plan.writes) {
        try {
          await ws.request(w.method, w.path, { body: w.body });
          log.info({ step: w.why }, "initializing provider workspace");
        } catch (err) {
          // Someone else wrote it first (kcp's default binding, a concurrent pass): the next look decides again.
          if (!isApiError(err, 409)) throw err;
        }
      }
      return false;
    }
    if (plan.kind === "wait") {
      log.debug({ reason: plan.reason }, "waiting");
      return false;
    }
    const lc = await ws.get<LogicalCluster>(LOGICAL_CLUSTER);
    const initializers = lc.status?.initializers ?? [];
    if (!initializers.includes(initializer)) return true;
    await ws.request("PUT", `${LOGICAL_CLUSTER}/status`, {
      body: { ...lc, status: { ...lc.status, initializers: withoutInitializer(initializers, initializer) } },
    });
    log.info({ initializer }, "provider workspace initialized; initializer removed");
    return true;
  }
}

/** The dep-ctrl binding and the index consent as the workspace holds them now. */
async function observe(ws: RestClient, cluster: string): Promise<WorkspaceFacts> {
  type Held = NonNullable<WorkspaceFacts["consentRole"]>;
  const [bindings, consentRole, consentBinding] = await Promise.all([
    ws.listAll<ObservedBinding>(APIBINDINGS_PATH),
    ws.getOptional<Held>(CONSENT_ROLE_PATH),
    ws.getOptional<Held>(CONSENT_BINDING_PATH),
  ]);
  return {
    cluster,
    bindings: bindings.items,
    ...(consentRole ? { consentRole } : {}),
    ...(consentBinding ? { consentBinding } : {}),
  };
}
