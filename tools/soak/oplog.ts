// The request log every worker, the churner and the probes write to, and what each of them is handed.
import { type Consumer } from "./env.ts";
import type { OpRecord } from "./history.ts";
import { request, type Answer, type ShardConn } from "./kube.ts";
import type { Rng } from "./rng.ts";

/** The request log every worker writes to. */
export class OpLog {
  readonly ops: OpRecord[] = [];
  private nextId = 1;

  async send(
    conn: ShardConn,
    entry: Omit<OpRecord, "id" | "sentAt" | "answeredAt" | "status" | "message">,
    method: string,
    path: string,
    opts: { body?: unknown; contentType?: string } = {},
  ): Promise<Answer> {
    const id = this.nextId++;
    const sentAt = Date.now();
    const answer = await request(conn, method, path, opts);
    this.ops.push({ id, ...entry, sentAt, answeredAt: Date.now(), status: answer.status, message: answer.message });
    return answer;
  }
}

export interface WorkloadOptions {
  conn: ShardConn; // the front-proxy with the admin identity
  consumers: Consumer[];
  vars: Record<string, string>;
  log: OpLog;
  rng: Rng;
  signal: AbortSignal;
  /** Workspaces no worker may use any more (being deleted). */
  retired: Set<string>;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
