// A kcp ConfigMap endpoint for the index reporter's tests: GET answers 404 until written, POST and PUT store the body.
import { parseIndexReport } from "../../src/api/index-report.ts";
import { toApiError } from "../../src/kcp/answers.ts";

export function fakeConfigMap() {
  let stored: unknown;
  const client = {
    request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T> {
      if (method === "GET")
        return stored
          ? Promise.resolve(structuredClone(stored) as T)
          : Promise.reject(toApiError(method, path, 404, "{}"));
      stored = opts?.body;
      return Promise.resolve(structuredClone(stored) as T);
    },
  };
  return { client, report: () => parseIndexReport(stored) };
}
