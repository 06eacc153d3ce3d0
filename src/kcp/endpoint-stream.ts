// One endpoint's list+watch for the Informer: a relist into a fresh store, then watches resumed from the last
// resourceVersion under a watchdog, with capped backoff after failures. Also the types both share.
import type { Logger } from "pino";
import { CLUSTER_ANNOTATION, type ObjectMeta } from "../api/types.ts";
import { isApiError, type RestClient, type WatchEvent } from "./rest.ts";
import { realClock, type Clock, type Timer } from "../util/clock.ts";

export interface KubeObject {
  metadata: ObjectMeta;
}

/**
 * Where one endpoint's objects are kept. The default keeps them whole (a Map); the dependents index keeps only the
 * references it decides with, so `values()` yields whatever the store keeps (`R`). A relist fills a fresh store page
 * by page and swaps it in, so a list is never held whole in memory and no reader sees it half applied.
 */
export interface EndpointStore<T, R = T> {
  set(key: string, obj: T): void;
  delete(key: string): void;
  values(): Iterable<R>;
  readonly size: number;
  /** Told once the store is no longer read: replaced by a relist's, dropped half-filled, or the stream stopped. */
  retire?(): void;
}

class MapStore<T> implements EndpointStore<T> {
  private readonly items = new Map<string, T>();
  set(key: string, obj: T): void {
    this.items.set(key, obj);
  }
  delete(key: string): void {
    this.items.delete(key);
  }
  values(): Iterable<T> {
    return this.items.values();
  }
  get size(): number {
    return this.items.size;
  }
}

export interface InformerOptions<T = unknown, R = T> {
  /** A new, empty store for one endpoint (called at every relist); whole objects in a Map when not given. */
  newStore?: () => EndpointStore<T, R>;
  /** Objects per list page (the relist's memory peak is one page). */
  pageSize?: number;
  /** Credentials and connection pool; each endpoint gets `client.withBase(url)`. */
  client: RestClient;
  /** Path below each endpoint, e.g. `/clusters/*\/apis/<group>/<version>/<resource>`. */
  path: string;
  logger: Logger;
  onChange: () => void;
  /** Server-side watch timeout; the watch is reopened from the last resourceVersion after it. */
  watchTimeoutSeconds?: number;
  /** Extra query parameters for list and watch, e.g. `{ labelSelector: "a=b" }`. */
  query?: Record<string, string>;
  /**
   * Seconds past `watchTimeoutSeconds` a watch may stay silent (no event, no bookmark) before the watchdog drops it
   * and opens a new one: the server ends every watch at its timeout, so a longer silence means the connection died
   * without a FIN (a dropped NAT entry, a dead peer) and the rule set would freeze while it still counts as synced.
   */
  watchdogMarginSeconds?: number;
  /** Times the watchdog and the backoff between failed attempts (default the real clock). */
  clock?: Clock;
  /** Called when the watchdog restarts a watch, e.g. to count it. */
  onWatchStalled?: (endpoint: string) => void;
}

const DEFAULT_WATCH_TIMEOUT_SECONDS = 300;
const DEFAULT_WATCHDOG_MARGIN_SECONDS = 30;

/** `<cluster>/<namespace>/<name>`: "/" occurs in none of the parts, so keys never collide. */
export function objectKey(obj: KubeObject): string {
  const m = obj.metadata;
  return `${m.annotations?.[CLUSTER_ANNOTATION] ?? ""}/${m.namespace ?? ""}/${m.name}`;
}

/** The parts of an objectKey (namespace "" for a cluster-scoped object); undefined for any other string. */
export function objectKeyParts(key: string): { cluster: string; namespace: string; name: string } | undefined {
  const a = key.indexOf("/");
  const b = a < 0 ? -1 : key.indexOf("/", a + 1);
  if (b < 0) return undefined;
  return { cluster: key.slice(0, a), namespace: key.slice(a + 1, b), name: key.slice(b + 1) };
}

const EXPIRED = Symbol("expired");

export class EndpointStream<T extends KubeObject, R> {
  store: EndpointStore<T, R>;
  synced = false;
  /**
   * The last list/watch failure (or a watch dropped as silent), until a list succeeds or a watch answers again: the
   * store may be stale meanwhile.
   */
  lastError: string | undefined;
  private readonly abort = new AbortController();
  private readonly client: RestClient;
  private readonly opts: InformerOptions<T, R>;
  private readonly newStore: () => EndpointStore<T, R>;
  private readonly log: Logger;
  private readonly url: string;
  private readonly clock: Clock;

  constructor(url: string, opts: InformerOptions<T, R>) {
    this.url = url;
    this.clock = opts.clock ?? realClock;
    this.client = opts.client.withBase(url);
    this.opts = opts;
    this.newStore = opts.newStore ?? (() => new MapStore<T>() as unknown as EndpointStore<T, R>);
    this.store = this.newStore();
    this.log = opts.logger.child({ endpoint: url });
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    if (!this.abort.signal.aborted) this.store.retire?.();
    this.abort.abort();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.abort.signal.aborted) {
      try {
        const rv = await this.relist();
        await this.watchFrom(rv);
        // Only a watch that ended normally resets the backoff: a list that works followed by a watch that is refused
        // (e.g. 403) must not become a tight relist loop.
        failures = 0;
      } catch (err) {
        if (this.abort.signal.aborted) return;
        failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        // Health is part of what listeners read (an index's report, a rule's status): tell them it turned failing
        // now, once per run of failures, rather than at their next timer.
        if (failures === 1) this.opts.onChange();
        const backoff = Math.min(10_000, 250 * 2 ** Math.min(failures, 6));
        this.log.warn({ err: String(err), backoffMs: backoff }, "list/watch failed; retrying");
        await this.clock.sleep(backoff, this.abort.signal).catch(() => undefined); // stopped while waiting
      }
    }
  }

  /** Replaces this endpoint's store with a fresh list, filled page by page; returns the list's resourceVersion. */
  private async relist(): Promise<string> {
    const next = this.newStore();
    let resourceVersion = "";
    try {
      await this.client.listPages<T>(
        this.opts.path,
        (page) => {
          for (const item of page.items ?? []) next.set(objectKey(item), item);
          resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
        },
        {
          signal: this.abort.signal,
          ...(this.opts.pageSize ? { limit: this.opts.pageSize } : {}),
          ...(this.opts.query ? { query: this.opts.query } : {}),
        },
      );
    } catch (err) {
      next.retire?.();
      throw err;
    }
    this.store.retire?.();
    this.store = next;
    this.synced = true;
    this.lastError = undefined;
    this.opts.onChange();
    return resourceVersion;
  }

  /**
   * Watches until the resourceVersion expires (410), which sends the caller back to a relist. Each watch runs under
   * a watchdog that is reset by every event and bookmark; when it fires, the watch is dropped and reopened from the
   * last resourceVersion.
   */
  private async watchFrom(resourceVersion: string): Promise<void> {
    let rv = resourceVersion;
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS;
    const deadlineMs = (timeoutSeconds + (this.opts.watchdogMarginSeconds ?? DEFAULT_WATCHDOG_MARGIN_SECONDS)) * 1000;
    for (;;) {
      let expired = false;
      const watch = new AbortController();
      const onStop = (): void => watch.abort();
      this.abort.signal.addEventListener("abort", onStop, { once: true });
      let stalled = false;
      let timer: Timer | undefined;
      const arm = (): void => {
        timer?.cancel();
        timer = this.clock.after(deadlineMs, () => {
          stalled = true;
          // Failing until the new watch answers: the shard may be unreachable (e.g. stopped, partitioned).
          this.lastError = `watch silent for ${deadlineMs / 1000} s, past its timeout`;
          this.log.warn({ resourceVersion: rv, silentForMs: deadlineMs }, "watch silent past its timeout; restarting");
          this.opts.onWatchStalled?.(this.url);
          watch.abort();
        });
      };
      arm();
      try {
        await this.client.watch<T>(
          this.opts.path,
          { ...this.opts.query, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds },
          (ev) => {
            arm();
            if (!stalled) this.lastError = undefined; // the server answers again
            const next = this.apply(ev);
            if (next === EXPIRED) expired = true;
            else if (next) rv = next;
          },
          watch.signal,
          () => {
            if (!stalled) this.lastError = undefined; // the server accepted the watch: the endpoint answers again
          },
        );
      } catch (err) {
        if (isApiError(err, 410)) return;
        // A watch dropped by the watchdog before its answer came: reopen it.
        if (!(stalled && !this.abort.signal.aborted)) throw err;
      } finally {
        timer?.cancel();
        this.abort.signal.removeEventListener("abort", onStop);
      }
      if (!stalled) this.lastError = undefined; // ended by the server as usual
      if (this.abort.signal.aborted || expired) return;
    }
  }

  /** Applies one event; returns the resourceVersion to resume from, or EXPIRED when a relist is needed. */
  private apply(ev: WatchEvent<T>): string | typeof EXPIRED | undefined {
    if (ev.type === "ERROR") {
      const status = ev.object as unknown as { code?: number; message?: string };
      this.log.info({ code: status.code, message: status.message }, "watch ended by server; relisting");
      return EXPIRED;
    }
    const rv = ev.object.metadata?.resourceVersion;
    if (ev.type === "BOOKMARK") return rv;
    const key = objectKey(ev.object);
    if (ev.type === "DELETED") this.store.delete(key);
    else this.store.set(key, ev.object);
    this.opts.onChange();
    return rv;
  }
}
