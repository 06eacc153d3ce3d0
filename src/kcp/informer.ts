// List+watch of one resource across a changing set of endpoints (one APIExport virtual workspace URL per shard).
// Objects are keyed by logical cluster + namespace + name, because a wildcard (`/clusters/*`) list returns
// same-named objects from many workspaces. Consumers are level-triggered: `onChange` says "something changed",
// and they read the whole `list()` again.
import { EndpointStream, type EndpointStore, type InformerOptions, type KubeObject } from "./endpoint-stream.ts";

export {
  objectKey,
  objectKeyParts,
  type EndpointStore,
  type InformerOptions,
  type KubeObject,
} from "./endpoint-stream.ts";

export class Informer<T extends KubeObject, R = T> {
  private readonly streams = new Map<string, EndpointStream<T, R>>();
  private readonly opts: InformerOptions<T, R>;
  private stopped = false;

  constructor(opts: InformerOptions<T, R>) {
    this.opts = opts;
  }

  /** Starts streams for new endpoints and stops (and forgets the objects of) endpoints no longer listed. */
  setEndpoints(urls: readonly string[]): void {
    if (this.stopped) return;
    const wanted = new Set(urls);
    let changed = false;
    for (const [url, stream] of this.streams) {
      if (!wanted.has(url)) {
        stream.stop();
        this.streams.delete(url);
        changed = true;
      }
    }
    for (const url of wanted) {
      if (this.streams.has(url)) continue;
      const stream = new EndpointStream<T, R>(url, this.opts);
      this.streams.set(url, stream);
      stream.start();
      changed = true;
    }
    if (changed) this.opts.onChange();
  }

  endpoints(): string[] {
    return [...this.streams.keys()];
  }

  /** True once every current endpoint has completed its first list. */
  hasSynced(): boolean {
    for (const s of this.streams.values()) if (!s.synced) return false;
    return true;
  }

  list(): R[] {
    const out: R[] = [];
    for (const s of this.streams.values()) for (const item of s.store.values()) out.push(item);
    return out;
  }

  /** Each object with the endpoint it came from: in multi-shard kcp that endpoint serves the object's workspace. */
  listWithEndpoints(): { endpoint: string; object: R }[] {
    const out: { endpoint: string; object: R }[] = [];
    for (const [endpoint, s] of this.streams) for (const object of s.store.values()) out.push({ endpoint, object });
    return out;
  }

  /** Endpoints whose list or watch is failing now, with the error (their stores may be stale). */
  failing(): { endpoint: string; error: string }[] {
    const out: { endpoint: string; error: string }[] = [];
    for (const [endpoint, s] of this.streams) if (s.lastError !== undefined) out.push({ endpoint, error: s.lastError });
    return out;
  }

  /** Every endpoint with its store, whether it has listed once, and its current failure if any. */
  endpointStates(): { endpoint: string; store: EndpointStore<T, R>; synced: boolean; error?: string }[] {
    return [...this.streams].map(([endpoint, s]) => ({
      endpoint,
      store: s.store,
      synced: s.synced,
      ...(s.lastError !== undefined ? { error: s.lastError } : {}),
    }));
  }

  /** The current store of every endpoint that has listed at least once. */
  syncedStores(): EndpointStore<T, R>[] {
    return [...this.streams.values()].filter((s) => s.synced).map((s) => s.store);
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.streams.values()) s.stop();
    this.streams.clear();
  }
}
