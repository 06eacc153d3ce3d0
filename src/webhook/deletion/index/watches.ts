// The dependents index's watches: one per dependent type a registered rule names, each across every shard of that
// type's APIExport virtual workspace (the rule's workspace, spec.dependent.apiExportName, `/clusters/*`), read with
// the consent the provider gave in deploy/rbac/provider-index.yaml. Each endpoint's objects go into a ReferenceStore.
//
// Level-triggered: `follow(registry)` is called with every new registry and makes the running watches match its
// dependent types. A type whose field paths changed gets a second watch; the first keeps answering the paths it has
// until the second has listed everything, then it is replaced. What a lookup reads from them is index.ts's job.
import type { Logger } from "pino";
import type { FieldPath } from "../../../fieldpath/fieldpath.ts";
import type { KubeObject } from "../../../kcp/informer.ts";
import type { RestClient } from "../../../kcp/rest.ts";
import { ExportWatch } from "../../../kcp/virtualworkspace.ts";
import { dependentTypeKey } from "../../../api/index-report.ts";
import type { IndexedType, RuleRegistry } from "../../rules/registry.ts";
import { ReferenceStore, type IndexedDependent } from "./store.ts";
import { UNREADABLE_REASONS, type IndexBudget, type UnreadableReason } from "./budget.ts";
import type { IndexLedger } from "./ceiling.ts";
import { watchEndpoints, type IndexEndpointPolicy } from "./export-endpoints.ts";

/** Why one dependent type cannot be answered from the index, for logs, metrics and the rule's status. */
export interface TypeHealth {
  type: string;
  state: "ready" | "syncing" | "failing";
  /** The failures, e.g. a 403 when the provider has not applied (or has revoked) its consent. */
  errors: string[];
}

/** One endpoint (shard) of a watch: its store, whether it has listed once, and its current failure if any. */
export interface EndpointState {
  endpoint: string;
  store: ReferenceStore;
  synced: boolean;
  error?: string;
}

/** The part of a watch of one dependent type the index needs; ExportWatch in production, a fake in tests. */
export interface IndexWatch {
  start(): void;
  stop(): void;
  /** True once the endpoint list and every endpoint's first list are in. */
  hasSynced(): boolean;
  /** True when the endpoint list is known, current and healthy. */
  endpointsKnown(): boolean;
  /** What is failing now: the endpoint list's list/watch, or an endpoint's. */
  failing(): { endpoint: string; error: string }[];
  endpointStates(): EndpointState[];
  /** A consistent read of one object of `cluster` through `endpoint`; undefined when it does not exist. */
  read(
    endpoint: string,
    cluster: string,
    path: string,
    opts: { timeoutMs: number; signal?: AbortSignal; maxBodyBytes?: number },
  ): Promise<unknown>;
}

/** Builds (does not start) the watch of one type; `onChange` must be called after every change. */
export type IndexWatchFactory = (spec: { key: string; type: IndexedType; onChange: () => void }) => IndexWatch;

export interface ExportWatchFactoryOptions {
  /** Which virtual workspace URLs of the provider's slices may be followed (export-endpoints.ts). */
  endpoints: IndexEndpointPolicy;
  pageSize?: number;
  budget?: Partial<IndexBudget>;
  /** The replica's index memory ceiling every store charges (ceiling.ts). */
  ledger?: IndexLedger;
}

/**
 * The production factory: an ExportWatch through the type's provider export, one ReferenceStore per endpoint, and
 * only the slice URLs the allow-list lets through (a refused one makes the type failing, with its URL in the error).
 */
export function exportWatchFactory(
  base: RestClient,
  logger: Logger,
  opts: ExportWatchFactoryOptions,
): IndexWatchFactory {
  return ({ key, type, onChange }) => {
    const d = type.dependent;
    const endpoints = watchEndpoints(opts.endpoints, { cluster: d.exportCluster, name: d.apiExportName });
    // The type's author: a rule's dependent is a resource of an APIExport in the rule's own workspace.
    const charge = opts.ledger && { ledger: opts.ledger, author: d.exportCluster };
    const watch = new ExportWatch<KubeObject, IndexedDependent>({
      exportWorkspace: base.forCluster(d.exportCluster),
      exportName: d.apiExportName,
      resourcePath: `/apis/${d.group}/${d.version}/${d.resource}`,
      logger: logger.child({ index: key }),
      newStore: () => new ReferenceStore(type.fieldPaths, undefined, opts.budget, charge),
      ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
      select: endpoints.select,
      onRefused: endpoints.onRefused,
      onChange,
    });
    return {
      start: () => {
        endpoints.start(() => watch.refresh());
        watch.start();
      },
      stop: () => {
        endpoints.stop();
        watch.stop();
      },
      hasSynced: () => watch.hasSynced(),
      endpointsKnown: () => watch.endpointsKnown(),
      failing: () => watch.failing(),
      // Every store comes from newStore above.
      endpointStates: () => watch.endpointStates() as EndpointState[],
      read: (endpoint, cluster, path, opts) => watch.clientFor(endpoint, cluster).getOptional(path, opts),
    };
  };
}

export interface TypeWatch {
  paths: string;
  watch: IndexWatch;
  /**
   * This watch has had a complete list of every endpoint it followed (possibly none) at some point: from then on
   * "where its dependents were" is known, even where no endpoint is left to say it (a slice rewritten to URLs the
   * allow-list refuses leaves none).
   */
  listed?: boolean;
}

/** Notes a complete list, once seen (see TypeWatch.listed). */
function noteListed(tw: TypeWatch): void {
  if (!tw.listed && tw.watch.hasSynced() && tw.watch.failing().length === 0) tw.listed = true;
}

/** The watch(es) of one type: `next` for a changed set of field paths, until it has listed everything. */
export interface Slot {
  type: IndexedType;
  current: TypeWatch;
  next?: TypeWatch;
}

export interface TypeWatchesOptions {
  watch: IndexWatchFactory;
  logger: Logger;
  /** Told when anything changed (e.g. to refresh the report). */
  onChange?: () => void;
}

const pathsKey = (paths: readonly FieldPath[]): string => paths.map((p) => p.source).join("\n");

export class TypeWatches {
  private readonly opts: TypeWatchesOptions;
  private readonly slots = new Map<string, Slot>();
  private stopped = false;

  constructor(opts: TypeWatchesOptions) {
    this.opts = opts;
  }

  /** Makes the watches match the registry's dependent types (idempotent; call it with every new registry). */
  follow(registry: RuleRegistry): void {
    if (this.stopped) return;
    const wanted = new Map(registry.dependentTypes().map((t) => [dependentTypeKey(t.dependent), t]));
    for (const [key, slot] of this.slots) {
      if (wanted.has(key)) continue;
      slot.current.watch.stop();
      slot.next?.watch.stop();
      this.slots.delete(key);
    }
    for (const [key, type] of wanted) {
      const slot = this.slots.get(key);
      const paths = pathsKey(type.fieldPaths);
      if (!slot) {
        this.slots.set(key, { type, current: this.startWatch(key, type) });
      } else if (slot.current.paths !== paths && slot.next?.paths !== paths) {
        slot.next?.watch.stop();
        slot.next = this.startWatch(key, type);
        slot.type = type;
      } else if (slot.current.paths === paths && slot.next) {
        slot.next.watch.stop(); // the paths changed back before the replacement was ready
        delete slot.next;
      }
    }
  }

  /** The watch(es) of a type (by dependentTypeKey), or undefined while it is not watched. */
  slot(key: string): Readonly<Slot> | undefined {
    return this.slots.get(key);
  }

  /** One line per watched type: ready, syncing, or failing with the errors. */
  health(): TypeHealth[] {
    return [...this.slots.entries()].map(([type, slot]) => {
      noteListed(slot.current);
      const failing = slot.current.watch.failing();
      if (failing.length > 0) return { type, state: "failing", errors: failing.map((f) => f.error) };
      return { type, state: slot.current.watch.hasSynced() ? "ready" : "syncing", errors: [] };
    });
  }

  /** Dependents indexed, over all types and endpoints. */
  size(): number {
    let n = 0;
    for (const slot of this.slots.values())
      for (const e of slot.current.watch.endpointStates()) if (e.synced) n += e.store.size;
    return n;
  }

  /** Unreadable dependents, and consumer workspaces (per type) holding any, by reason, over all types and endpoints. */
  unreadable(): { objects: Record<UnreadableReason, number>; workspaces: Record<UnreadableReason, number> } {
    const objects = { names: 0, budget: 0, share: 0 };
    const workspaces = { names: 0, budget: 0, share: 0 };
    for (const slot of this.slots.values())
      for (const e of slot.current.watch.endpointStates()) {
        if (!e.synced) continue;
        const w = e.store.workspacesUnreadable();
        for (const r of UNREADABLE_REASONS) {
          objects[r] += e.store.unreadable[r];
          workspaces[r] += w[r];
        }
      }
    return { objects, workspaces };
  }

  stop(): void {
    this.stopped = true;
    for (const slot of this.slots.values()) {
      slot.current.watch.stop();
      slot.next?.watch.stop();
    }
    this.slots.clear();
  }

  private startWatch(key: string, type: IndexedType): TypeWatch {
    const tw: TypeWatch = {
      paths: pathsKey(type.fieldPaths),
      watch: this.opts.watch({ key, type, onChange: () => this.onWatchChange(key, tw) }),
    };
    tw.watch.start();
    return tw;
  }

  /** Promotes a replacement watch once it has listed everything. */
  private onWatchChange(key: string, tw: TypeWatch): void {
    noteListed(tw);
    const slot = this.slots.get(key);
    if (slot?.next === tw && tw.watch.hasSynced() && tw.watch.failing().length === 0) {
      slot.current.watch.stop();
      slot.current = tw;
      delete slot.next;
      this.opts.logger.info({ index: key }, "dependents index rebuilt for new field paths");
    }
    this.opts.onChange?.();
  }
}
