// The dependents index: one watch per dependent type named by a registered rule, through that type's own APIExport
// virtual workspace (the rule's workspace, spec.dependent.apiExportName; one endpoint per shard, `/clusters/*`),
// read with the consent the provider gave in deploy/rbac/provider-index.yaml. Each endpoint's objects go into a
// ReferenceStore, so a DELETE is decided without a round trip to kcp.
//
// Level-triggered: `follow(registry)` is called with every new registry and makes the running watches match its
// dependent types. A type whose field paths changed gets a second watch; the first keeps answering the paths it has
// until the second has listed everything, then it is replaced. A lookup the index cannot answer truthfully (type not
// watched yet, not listed on every shard, a list or watch failing, a path not indexed yet) throws
// IndexUnavailableError: the handler refuses that DELETE with a 503 and decides every other one.
import type { Logger } from "pino";
import type { FieldPath } from "../../../fieldpath/fieldpath.ts";
import type { KubeObject } from "../../../kcp/informer.ts";
import type { RestClient } from "../../../kcp/rest.ts";
import { ExportWatch } from "../../../kcp/virtualworkspace.ts";
import { MAX_CAUSES, type Lookup } from "../../admission.ts";
import type { DependentFinder, FoundDependents } from "../live.ts";
import { dependentTypeKey } from "../../../api/index-report.ts";
import type { IndexedType, RuleRegistry } from "../../rules/registry.ts";
import { confirmDependents, type ConfirmResult } from "./confirm.ts";
import { NotIndexedError, ReferenceStore, type IndexedDependent } from "./store.ts";

/** A second look at a found dependent must not eat the DELETE's whole lookup budget (8 s); a timeout keeps it. */
const CONFIRM_TIMEOUT_MS = 2_000;

/** A lookup the index cannot answer now; `message` is safe to show the deleter, `detail` is for the log. */
export class IndexUnavailableError extends Error {
  override name = "IndexUnavailableError";
  readonly detail: string;
  constructor(message: string, detail: string) {
    super(message);
    this.detail = detail;
  }
}

/** Why one dependent type cannot be answered from the index, for logs, metrics and the rule's status. */
export interface TypeHealth {
  type: string;
  state: "ready" | "syncing" | "failing";
  /** The failures, e.g. a 403 when the provider has not applied (or has revoked) its consent. */
  errors: string[];
}

interface TypeWatch {
  paths: string;
  watch: ExportWatch<KubeObject, IndexedDependent>;
}

interface Slot {
  type: IndexedType;
  current: TypeWatch;
  /** A watch for a changed set of field paths, until it has listed everything. */
  next?: TypeWatch;
}

export interface DependentsIndexOptions {
  /** Client rooted at the kcp base URL (front-proxy) with the webhook's identity. */
  base: RestClient;
  logger: Logger;
  /** Objects per list page while (re)listing a type. */
  pageSize?: number;
  /** Told when anything changed (e.g. to refresh metrics). */
  onChange?: () => void;
}

const pathsKey = (paths: readonly FieldPath[]): string => paths.map((p) => p.source).join("\n");

export class DependentsIndex implements DependentFinder {
  private readonly opts: DependentsIndexOptions;
  private readonly slots = new Map<string, Slot>();
  private stopped = false;

  constructor(opts: DependentsIndexOptions) {
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

  async find(lookup: Lookup, wanted: number, signal?: AbortSignal): Promise<FoundDependents> {
    // Reading the index is cheap, so it finds up to MAX_CAUSES even when fewer are asked for: the message can then say
    // "and 2 more" rather than "and at least 1 more".
    const limit = Math.max(wanted, MAX_CAUSES);
    const key = dependentTypeKey(lookup.dependent);
    const slot = this.slots.get(key);
    const what = describe(lookup);
    if (!slot)
      throw new IndexUnavailableError(`the index of ${what} is starting`, `${key}: no watch for this type yet`);
    let problem: Answer | undefined;
    for (const w of slot.next ? [slot.current, slot.next] : [slot.current]) {
      const answer = answerFrom(w.watch, lookup, limit);
      if (answer.kind === "found") return this.confirm(w.watch, answer, lookup, signal);
      if (!problem || (problem.kind === "not-indexed" && answer.kind !== "not-indexed")) problem = answer;
    }
    if (problem?.kind === "failing")
      throw new IndexUnavailableError(`the index of ${what} is not readable`, `${key}: ${problem.detail}`);
    throw new IndexUnavailableError(
      `the index of ${what} is still syncing`,
      `${key}: not every endpoint has listed the type with these field paths yet`,
    );
  }

  /** Reads of found dependents before a denial (confirm.ts), by result, since the start. */
  readonly confirmations: Record<ConfirmResult, number> = { kept: 0, gone: 0, error: 0 };

  private async confirm(
    watch: ExportWatch<KubeObject, IndexedDependent>,
    answer: Extract<Answer, { kind: "found" }>,
    lookup: Lookup,
    signal: AbortSignal | undefined,
  ): Promise<FoundDependents> {
    if (answer.endpoint === undefined) return answer.found;
    const client = watch.clientFor(answer.endpoint, lookup.consumer);
    const read = (path: string): Promise<unknown> =>
      client.getOptional(path, { timeoutMs: CONFIRM_TIMEOUT_MS, ...(signal ? { signal } : {}) });
    return confirmDependents(answer.found, lookup, read, (r) => this.confirmations[r]++);
  }

  /** One line per watched type: ready, syncing, or failing with the errors. */
  health(): TypeHealth[] {
    return [...this.slots.entries()].map(([type, slot]) => {
      const failing = slot.current.watch.failing();
      if (failing.length > 0) return { type, state: "failing", errors: failing.map((f) => f.error) };
      return { type, state: slot.current.watch.hasSynced() ? "ready" : "syncing", errors: [] };
    });
  }

  /** Dependents indexed, over all types and endpoints. */
  size(): number {
    let n = 0;
    for (const slot of this.slots.values()) for (const s of slot.current.watch.syncedStores()) n += s.size;
    return n;
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
    const d = type.dependent;
    const paths = type.fieldPaths;
    const tw: TypeWatch = {
      paths: pathsKey(paths),
      watch: new ExportWatch<KubeObject, IndexedDependent>({
        exportWorkspace: this.opts.base.forCluster(d.exportCluster),
        exportName: d.apiExportName,
        resourcePath: `/apis/${d.group}/${d.version}/${d.resource}`,
        logger: this.opts.logger.child({ index: key }),
        newStore: () => new ReferenceStore(paths),
        ...(this.opts.pageSize ? { pageSize: this.opts.pageSize } : {}),
        onChange: () => this.onWatchChange(key, tw),
      }),
    };
    tw.watch.start();
    return tw;
  }

  /** Promotes a replacement watch once it has listed everything. */
  private onWatchChange(key: string, tw: TypeWatch): void {
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

type Answer =
  | { kind: "found"; found: FoundDependents; endpoint?: string }
  | { kind: "failing"; detail: string }
  | { kind: "syncing" }
  | { kind: "not-indexed" };

/**
 * The answer of one watch (all shards of one type). A consumer workspace lives on one shard: if a healthy endpoint
 * holds any of its objects, that endpoint alone answers, whatever the other shards are doing. Otherwise "none" is
 * true only when every endpoint is known, listed and healthy; else the consumer might be on the shard we cannot see.
 */
function answerFrom(watch: ExportWatch<KubeObject, IndexedDependent>, lookup: Lookup, limit: number): Answer {
  try {
    const states = watch.endpointStates();
    const home = states.find((e) => e.synced && (e.store as ReferenceStore).hasCluster(lookup.consumer));
    if (home) {
      if (home.error !== undefined) return { kind: "failing", detail: `${home.endpoint}: ${home.error}` };
      return {
        kind: "found",
        found: found((home.store as ReferenceStore).find(lookup, limit)),
        endpoint: home.endpoint,
      };
    }
    const failing = watch.failing();
    if (failing.length > 0)
      return { kind: "failing", detail: failing.map((f) => `${f.endpoint}: ${f.error}`).join("; ") };
    if (!watch.endpointsKnown() || states.some((e) => !e.synced)) return { kind: "syncing" };
    // Checks the paths are indexed even when nothing is there to find.
    for (const e of states) (e.store as ReferenceStore).find(lookup, limit);
    return { kind: "found", found: { ok: true, dependents: [], complete: true } };
  } catch (err) {
    if (err instanceof NotIndexedError) return { kind: "not-indexed" };
    throw err;
  }
}

const found = (r: { dependents: FoundDependents["dependents"]; complete: boolean }): FoundDependents => ({
  ok: true,
  ...r,
});

function describe(lookup: Lookup): string {
  const d = lookup.dependent;
  return `${d.resource}${d.group ? "." + d.group : ""}`;
}
