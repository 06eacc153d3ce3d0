// A small JSON REST client for kcp: credentials from a kubeconfig, and a base URL that may be a workspace
// (`…/clusters/<x>`), a shard, or an APIExport virtual workspace. transport.ts holds its connection pools and deadlines.
// client-node's generated clients assume one fixed server per config; kcp needs many bases with one identity.
import type http from "node:http";
import { BodyTooLargeError, isApiError, readBody, readLines, toApiError } from "./answers.ts";
import { DEFAULT_RETRY_POLICY, retrying429, type RetryPolicy } from "./retry.ts";
import { agentsFor, send, type Agents, type Credentials } from "./transport.ts";

export { ApiError, BodyTooLargeError, isApiError } from "./answers.ts";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.ts";
export type { Credentials } from "./transport.ts";

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Per-request timeout in milliseconds (default 30 s); watches pass 0 for none. */
  timeoutMs?: number;
  /** Largest response body read, in bytes (default DEFAULT_MAX_BODY_BYTES); past it the answer is dropped unread. */
  maxBodyBytes?: number;
}

/** Options of a paginated list. */
export interface ListOptions extends RequestOptions {
  /** Items asked for per page (default 500). */
  limit?: number;
  /** Largest page read, in bytes (default DEFAULT_MAX_PAGE_BYTES); a page over it is asked for again, smaller. */
  maxPageBytes?: number;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
}

export interface List<T> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Largest list page read. kcp refuses to store an object over 1.5 MiB (etcd's request limit), so a page of one item
 * always fits; 1,000 dependents of a typical 2 KiB fit in one page. A JSON text costs up to about 17 times its size
 * once parsed (3 MiB became 52 MiB of heap when measured), so 4 MiB per page keeps one lookup under about 70 MiB.
 */
export const DEFAULT_MAX_PAGE_BYTES = 4 * 1024 * 1024;

/** Largest body of any other answer: one object (at most 1.5 MiB in kcp) or a Status, with room to spare. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface ClientOptions {
  /** Connection pools to share (withBase passes its own); default: new keep-alive pools for the credentials. */
  agents?: Agents | undefined;
  /** How a 429 is retried (DEFAULT_RETRY_POLICY where not given); `{ maxRetries: 0 }` turns it off. */
  retry?: Partial<RetryPolicy> | undefined;
}

/** What listPagesWith needs of a client: one request (RestClient.request, or a narrower client that has only that). */
export type Requester = <T>(method: string, path: string, opts: RequestOptions) => Promise<T>;

/**
 * Lists page by page (limit/continue) and calls `onPage` for each; stops early when it returns false. A page over
 * `maxPageBytes` is dropped as soon as it crosses the cap and asked for again with half the limit (same continue
 * token), down to one item; the smaller limit is kept for the rest of the list. One item over the cap fails with
 * BodyTooLargeError. A 410 on a continue token (the snapshot expired) is surfaced to the caller, who must restart.
 */
export async function listPagesWith<T>(
  request: Requester,
  path: string,
  onPage: (page: List<T>) => boolean | void,
  opts: ListOptions = {},
): Promise<void> {
  const { limit: initial, maxPageBytes, ...rest } = opts;
  let limit = Math.max(1, initial ?? 500);
  let cont: string | undefined;
  for (;;) {
    const query = { ...rest.query, limit, continue: cont };
    let page: List<T>;
    try {
      page = await request<List<T>>("GET", path, {
        ...rest,
        query,
        maxBodyBytes: maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES,
      });
    } catch (err) {
      if (!(err instanceof BodyTooLargeError) || limit === 1) throw err;
      limit = Math.max(1, Math.floor(limit / 2));
      continue;
    }
    if (onPage(page) === false) return;
    cont = page.metadata?.continue || undefined;
    if (!cont) return;
  }
}

export class RestClient {
  readonly baseUrl: string;
  private readonly credentials: Credentials;
  private readonly agents: Agents;
  private readonly retry: RetryPolicy;

  constructor(baseUrl: string, credentials: Credentials, opts: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.credentials = credentials;
    this.retry = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
    this.agents = opts.agents ?? agentsFor(this.baseUrl, credentials);
  }

  /** The same identity and connection pool against another base URL (a workspace, a shard, a virtual workspace). */
  withBase(baseUrl: string): RestClient {
    return new RestClient(baseUrl, this.credentials, { agents: this.agents, retry: this.retry });
  }

  /** `<base>/clusters/<cluster>`; the base must not already name a cluster. */
  forCluster(cluster: string): RestClient {
    return this.withBase(`${this.baseUrl}/clusters/${cluster}`);
  }

  close(): void {
    this.agents.requests.destroy();
    this.agents.watches.destroy();
  }

  async get<T>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>("GET", path, opts);
  }

  /** GET that answers undefined on 404 instead of throwing. */
  async getOptional<T>(path: string, opts: RequestOptions = {}): Promise<T | undefined> {
    try {
      return await this.request<T>("GET", path, opts);
    } catch (err) {
      if (isApiError(err, 404)) return undefined;
      throw err;
    }
  }

  /**
   * One request, its answer read whole and parsed. A 429 is sent again as the retry policy and Retry-After say, while
   * `opts.signal` has not aborted; any other status outside 2xx, or the last 429, throws ApiError.
   */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = this.url(path, opts.query);
    const maxBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const exchange = async () => {
      const res = await this.send(method, path, opts);
      const text = await readBody(res, maxBytes, method, url);
      return { status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], text };
    };
    const { status, text } = await retrying429(exchange, this.retry, opts.signal);
    if (status < 200 || status >= 300) throw toApiError(method, url, status, text);
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  /** Lists page by page: see listPagesWith. */
  async listPages<T>(path: string, onPage: (page: List<T>) => boolean | void, opts: ListOptions = {}): Promise<void> {
    return listPagesWith((method, p, o) => this.request(method, p, o), path, onPage, opts);
  }

  /** Lists everything (paginated under the hood) and returns the items plus the list's resourceVersion. */
  async listAll<T>(path: string, opts: ListOptions = {}): Promise<List<T>> {
    const items: T[] = [];
    let resourceVersion: string | undefined;
    await this.listPages<T>(
      path,
      (page) => {
        for (const item of page.items ?? []) items.push(item);
        resourceVersion = page.metadata?.resourceVersion;
      },
      opts,
    );
    return { metadata: resourceVersion !== undefined ? { resourceVersion } : {}, items };
  }

  /** Opens a watch: `onOpen` once the server accepted it, then `onEvent` per event until the server closes the stream
   * or `signal` aborts. Resolves when the stream ends; rejects with ApiError if the server refuses the watch. */
  async watch<T>(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: WatchEvent<T>) => void,
    signal?: AbortSignal,
    onOpen?: () => void,
  ): Promise<void> {
    const res = await this.send("GET", path, {
      query: { ...query, watch: true },
      timeoutMs: 0,
      ...(signal ? { signal } : {}),
    });
    const status = res.statusCode ?? 0;
    const url = this.url(path, query);
    if (status !== 200)
      throw toApiError("WATCH", url, status, await readBody(res, DEFAULT_MAX_BODY_BYTES, "WATCH", url));
    onOpen?.();
    try {
      await readLines(res, (line) => onEvent(JSON.parse(line) as WatchEvent<T>));
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
  }

  url(path: string, query?: RequestOptions["query"]): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") u.searchParams.set(k, String(v));
    return u.toString();
  }

  private async send(method: string, path: string, opts: RequestOptions): Promise<http.IncomingMessage> {
    const url = this.url(path, opts.query);
    const headers: Record<string, string> = { accept: "application/json", ...(await this.credentials.headers()) };
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload = Buffer.from(typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body));
      headers["content-type"] = opts.contentType ?? "application/json";
      headers["content-length"] = String(payload.length);
    }
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const watch = opts.query?.["watch"] === true;
    return send(this.agents, this.credentials, {
      method,
      url,
      headers,
      payload,
      signal: opts.signal,
      timeoutMs,
      watch,
    });
  }
}
