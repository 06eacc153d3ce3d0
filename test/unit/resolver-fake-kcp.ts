// A kcp stand-in for the workspace resolver that counts every GET: Workspace objects by path, answered as kcp does
// (403 for anything inside a workspace that does not exist or that the caller may not read, 404 for a missing child).
import { ApiError } from "../../src/kcp/rest.ts";

const WORKSPACE_URL = /^\/clusters\/([^/]+)\/apis\/tenancy\.kcp\.io\/v1alpha1\/workspaces\/([^/]+)$/;

export class CountingKcp {
  /** Existing workspaces: path → logical cluster. */
  readonly workspaces = new Map<string, string>();
  /** Workspaces the caller may not read inside (403). */
  readonly forbidden = new Set<string>();
  /** Paths whose read fails with this status (e.g. 500), whatever exists. */
  readonly failing = new Map<string, number>();
  /** Every path read, in order. */
  readonly reads: string[] = [];

  constructor(workspaces: Record<string, string> = {}) {
    for (const [path, cluster] of Object.entries(workspaces)) this.workspaces.set(path, cluster);
  }

  get gets(): number {
    return this.reads.length;
  }

  /** The resolver's `base` (RestClient.get): a promise, answered on a later microtask like a real request. */
  get<T>(url: string): Promise<T> {
    return Promise.resolve().then(() => this.answer(url) as T);
  }

  private answer(url: string): unknown {
    const m = WORKSPACE_URL.exec(url);
    if (!m) throw new Error(`unexpected GET ${url}`);
    const [, parent = "", name = ""] = m;
    const path = `${parent}:${name}`;
    this.reads.push(path);
    const fail = (status: number, reason: string): never => {
      throw new ApiError("GET", url, status, reason, reason);
    };
    const status = this.failing.get(path);
    if (status !== undefined) fail(status, "InternalError");
    if ((parent !== "root" && !this.workspaces.has(parent)) || this.forbidden.has(parent)) fail(403, "Forbidden");
    const cluster = this.workspaces.get(path) ?? fail(404, "NotFound");
    return { metadata: { name }, spec: { cluster }, status: { phase: "Ready" } };
  }
}
