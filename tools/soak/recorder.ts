// Records kcp's history for the checker: per watched collection, a LIST (its items as INITIAL records) and then a
// WATCH from the list's resourceVersion, restarted from the last one seen when the server ends it; a 410 Gone relists
// and is reported as a gap. Every record carries the shard's resourceVersion and the local receive time.
import { getJson, watchStream, type ShardConn } from "./kube.ts";
import type { History, WatchRecord } from "./history.ts";

export interface Collection {
  shard: string;
  conn: ShardConn;
  cluster: string;
  /** e.g. "/apis/network.test.io/v1/vpcs" or "/api/v1/namespaces" */
  path: string;
  /** group-qualified resource, e.g. "vpcs.network.test.io" */
  resource: string;
}

export class Recorder {
  private readonly abort = new AbortController();
  private readonly running: Promise<void>[] = [];
  readonly history: Pick<History, "watches" | "gaps">;

  constructor(history: Pick<History, "watches" | "gaps">) {
    this.history = history;
  }

  async watch(c: Collection): Promise<void> {
    const rv = await this.list(c);
    this.running.push(this.loop(c, rv));
  }

  private async list(c: Collection): Promise<string> {
    // A shard answers 429 for a while after a binding, until it serves the bound resource: retry for a minute.
    let res = await getJson(c.conn, `/clusters/${c.cluster}${c.path}`);
    for (let i = 0; i < 120 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 500));
      res = await getJson(c.conn, `/clusters/${c.cluster}${c.path}`);
    }
    if (res.status !== 200)
      throw new Error(
        `LIST ${c.cluster}${c.path} on ${c.shard}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
      );
    const list = res.body as { metadata: { resourceVersion: string }; items: Record<string, unknown>[] };
    const now = Date.now();
    for (const item of list.items) this.record(c, "INITIAL", item, now);
    return list.metadata.resourceVersion;
  }

  private record(c: Collection, type: WatchRecord["type"], object: Record<string, unknown>, recvAt: number): void {
    const m = (object["metadata"] ?? {}) as Record<string, unknown>;
    delete m["managedFields"];
    this.history.watches.push({
      type,
      shard: c.shard,
      cluster: c.cluster,
      resource: c.resource,
      namespace: typeof m["namespace"] === "string" ? m["namespace"] : "",
      name: String(m["name"]),
      rv: Number(m["resourceVersion"]),
      recvAt,
      object,
    });
  }

  private async loop(c: Collection, startRv: string): Promise<void> {
    let rv = startRv;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let gone = false;
      try {
        const status = await watchStream(
          c.conn,
          `/clusters/${c.cluster}${c.path}?watch=true&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion=${rv}`,
          signal,
          (ev) => {
            const now = Date.now();
            if (ev.type === "ERROR") {
              gone = (ev.object as { code?: number }).code === 410;
              return;
            }
            const newRv = String((ev.object["metadata"] as Record<string, unknown>)["resourceVersion"]);
            if (ev.type === "BOOKMARK") {
              rv = newRv;
              return;
            }
            this.record(c, ev.type as WatchRecord["type"], ev.object, now);
            rv = newRv;
          },
        );
        if (status === 410) gone = true;
        else if (status === 403 || status === 404) {
          // The workspace is gone (a workspace deletion): nothing more to watch here.
          this.history.gaps.push({
            shard: c.shard,
            what: `${c.cluster}${c.path}: watch answered ${status}`,
            at: Date.now(),
          });
          return;
        } else if (status !== 200 && status !== 0) throw new Error(`watch answered ${status}`);
      } catch (err) {
        if (signal.aborted) return;
        this.history.gaps.push({
          shard: c.shard,
          what: `${c.cluster}${c.path}: ${(err as Error).message}`,
          at: Date.now(),
        });
        await new Promise((r) => setTimeout(r, 500));
      }
      if (gone && !signal.aborted) {
        this.history.gaps.push({ shard: c.shard, what: `${c.cluster}${c.path}: 410 Gone, relisted`, at: Date.now() });
        rv = await this.list(c).catch(() => rv);
      }
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled(this.running);
  }
}
