// Writing many objects into kcp fast: namespaces, VPCs and VMs in bulk, with retries on kcp's transient answers.
import { ApiError, isApiError, type RestClient } from "../src/kcp/rest.ts";
import type { KObject } from "../tools/kcp/api.ts";
import { VMS, VPCS, at } from "../tools/kcp/objects.ts";

export async function ensureNamespace(ws: RestClient, name: string): Promise<void> {
  try {
    await ws.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  } catch (err) {
    if (!isApiError(err, 409)) throw err;
  }
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

const collectionOf = (obj: KObject): string =>
  at(obj.kind === "VPC" ? VPCS : obj.kind === "VirtualMachine" ? VMS : "", obj.metadata.namespace ?? "default");

/** POSTs every object (VPCs and VMs), `concurrency` in flight; an object that already exists counts as created. */
export async function createAll(ws: RestClient, objects: readonly KObject[], concurrency = 24): Promise<void> {
  await pool(objects, concurrency, async (obj) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await ws.request("POST", collectionOf(obj), { body: obj });
        return;
      } catch (err) {
        if (isApiError(err, 409)) return;
        const transient = !(err instanceof ApiError) || err.status === 429 || err.status >= 500;
        if (!transient || attempt >= 6) throw err;
        await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
      }
    }
  });
}

/** Number of objects in a collection, counted through a paginated list. */
export async function countItems(ws: RestClient, collection: string): Promise<number> {
  let n = 0;
  await ws.listPages(collection, (page) => void (n += page.items?.length ?? 0), { limit: 500 });
  return n;
}
