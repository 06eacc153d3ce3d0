// The finalizer teardown rows' view of kcp: a watch of the VPCs and VMs of one workspace from a LIST's
// resourceVersion (kcp's own history, ordered by the shard's revisions), and the simulated backend: each VM carries
// a finalizer that the backend clears a fixed time after it sees the VM's deletionTimestamp, as a cloud backend
// would once the machine is gone.
import { isApiError, type RestClient, type WatchEvent } from "../src/kcp/rest.ts";
import type { Clock } from "../src/util/clock.ts";
import { isRecord } from "../src/util/json.ts";

export const BACKEND_FINALIZER = "bench.test.io/backend";
const VPCS_ALL = "/apis/network.test.io/v1/vpcs";
const VMS_ALL = "/apis/compute.test.io/v1/virtualmachines";

export interface Seen {
  type: "INITIAL" | "ADDED" | "MODIFIED" | "DELETED";
  kind: "VPC" | "VM";
  namespace: string;
  name: string;
  /** The shard's revision: comparable across both types in one workspace on one shard. */
  rv: number;
  /** The VPC a VM names. */
  vpc?: string;
  deleting: boolean;
  finalizers: string[];
}

function seen(type: Seen["type"], kind: Seen["kind"], obj: unknown): Seen {
  const o = isRecord(obj) ? obj : {};
  const m = isRecord(o["metadata"]) ? o["metadata"] : {};
  const spec = isRecord(o["spec"]) ? o["spec"] : {};
  const ref = isRecord(spec["vpcRef"]) ? spec["vpcRef"]["name"] : undefined;
  return {
    type,
    kind,
    namespace: typeof m["namespace"] === "string" ? m["namespace"] : "",
    name: typeof m["name"] === "string" ? m["name"] : "",
    rv: Number(m["resourceVersion"] ?? 0),
    ...(typeof ref === "string" ? { vpc: ref } : {}),
    deleting: typeof m["deletionTimestamp"] === "string",
    finalizers: Array.isArray(m["finalizers"]) ? (m["finalizers"] as unknown[]).map(String) : [],
  };
}

/** Records both collections of one workspace and runs the backend on the VMs it sees. */
export class TeardownWatch {
  readonly events: Seen[] = [];
  readonly gaps: string[] = [];
  finalizersCleared = 0;
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly scheduled = new Set<string>();
  private readonly patches = new Set<Promise<void>>();
  private readonly ws: RestClient;
  private readonly clock: Clock;
  private readonly finalizerMs: number;

  constructor(ws: RestClient, clock: Clock, finalizerMs: number) {
    this.ws = ws;
    this.clock = clock;
    this.finalizerMs = finalizerMs;
  }

  /** Lists both types (INITIAL records) and follows them; resolves once both watches are open. */
  async start(): Promise<void> {
    for (const [kind, path] of [
      ["VPC", VPCS_ALL],
      ["VM", VMS_ALL],
    ] as const) {
      const list = await this.ws.listAll<unknown>(path);
      for (const item of list.items) this.push(seen("INITIAL", kind, item));
      let opened!: () => void;
      const open = new Promise<void>((r) => (opened = r));
      this.loops.push(this.follow(kind, path, list.metadata.resourceVersion ?? "0", opened));
      await open;
    }
  }

  private push(s: Seen): void {
    this.events.push(s);
    if (s.kind === "VM" && s.deleting && s.finalizers.includes(BACKEND_FINALIZER)) this.schedule(s);
  }

  private schedule(s: Seen): void {
    const key = `${s.namespace}/${s.name}`;
    if (this.scheduled.has(key)) return;
    this.scheduled.add(key);
    this.clock.after(this.finalizerMs, () => {
      const p = this.clear(s).finally(() => this.patches.delete(p));
      this.patches.add(p);
    });
  }

  /** The backend is done with the machine: drop its finalizer (the VM had no other). */
  private async clear(s: Seen): Promise<void> {
    const path = `/apis/compute.test.io/v1/namespaces/${s.namespace}/virtualmachines/${s.name}`;
    for (let attempt = 1; attempt <= 5; attempt++) {
      try {
        await this.ws.request("PATCH", path, {
          body: { metadata: { finalizers: null } },
          contentType: "application/merge-patch+json",
        });
        this.finalizersCleared++;
        return;
      } catch (err) {
        if (isApiError(err, 404)) return;
        if (attempt === 5) this.gaps.push(`clearing the finalizer of ${s.namespace}/${s.name}: ${String(err)}`);
        else await this.clock.sleep(200 * attempt);
      }
    }
  }

  private async follow(kind: Seen["kind"], path: string, from: string, opened: () => void): Promise<void> {
    let rv = from;
    const signal = this.abort.signal;
    const onEvent = (ev: WatchEvent<unknown>): void => {
      const meta = isRecord(ev.object) && isRecord(ev.object["metadata"]) ? ev.object["metadata"] : {};
      if (ev.type === "ERROR") throw new Error(`watch error: ${JSON.stringify(ev.object).slice(0, 200)}`);
      if (typeof meta["resourceVersion"] === "string") rv = meta["resourceVersion"];
      if (ev.type !== "BOOKMARK") this.push(seen(ev.type, kind, ev.object));
    };
    while (!signal.aborted) {
      try {
        const query = { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 300 };
        await this.ws.watch(path, query, onEvent, signal, opened);
      } catch (err) {
        if (signal.aborted) return;
        opened();
        // The workspace is gone (a workspace deletion): nothing more to see there.
        if (isApiError(err, 403) || isApiError(err, 404)) return;
        this.gaps.push(`${kind} watch: ${(err as Error).message}`);
        if (/410|too old/i.test((err as Error).message)) return;
        await this.clock.sleep(200);
      }
    }
  }

  /** Stops the watches; waits for finalizer patches in flight. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.loops, ...this.patches]);
  }
}
