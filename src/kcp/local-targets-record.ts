// The record of the exports where local-target configurations may be installed (local-targets.ts decides what it
// holds), as one ConfigMap in the dep-ctrl workspace beside the rule verdicts (verdict-configmaps.ts): only the
// controller's leader writes there, so no tenant can add or hide an export. Read every pass (one GET); written only when
// it changes, so a steady state writes nothing. A conflict (another leader wrote) throws, and the pass runs again.
import { VERDICTS_COLLECTION_PATH, VERDICTS_NAMESPACE } from "../api/verdict-configmaps.ts";
import type { DependentExport } from "../controller/local-targets.ts";
import {
  exportRecordData,
  LOCAL_EXPORTS_KEY,
  LOCAL_EXPORTS_NAME,
  parseExportRecord,
} from "../controller/local-targets-visits.ts";
import { isApiError } from "./rest.ts";

/** How a pass reads and keeps the record (a ConfigMap in production; tests may keep it in memory). */
export interface ExportRecord {
  read(): Promise<DependentExport[]>;
  write(exports: readonly DependentExport[]): Promise<void>;
}

interface Client {
  request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T>;
}

interface RecordConfigMap {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

const EMPTY = exportRecordData([])[LOCAL_EXPORTS_KEY];

export class ExportRecordConfigMap implements ExportRecord {
  private readonly client: Client;
  /** What the last read or write saw: whether it exists, its text and resourceVersion (for the PUT). */
  private seen: { exists: boolean; text: string; resourceVersion?: string } = { exists: false, text: EMPTY! };

  constructor(client: Client) {
    this.client = client;
  }

  async read(): Promise<DependentExport[]> {
    let cm: RecordConfigMap | undefined;
    try {
      cm = await this.client.request<RecordConfigMap>("GET", `${VERDICTS_COLLECTION_PATH}/${LOCAL_EXPORTS_NAME}`);
    } catch (err) {
      if (!isApiError(err, 404)) throw err;
    }
    this.remember(cm);
    return parseExportRecord(cm);
  }

  async write(exports: readonly DependentExport[]): Promise<void> {
    const data = exportRecordData(exports);
    if (data[LOCAL_EXPORTS_KEY] === this.seen.text) return;
    const rv = this.seen.resourceVersion;
    const body = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: LOCAL_EXPORTS_NAME, namespace: VERDICTS_NAMESPACE, ...(rv ? { resourceVersion: rv } : {}) },
      data,
    };
    const answer = await (this.seen.exists
      ? this.client.request<RecordConfigMap>("PUT", `${VERDICTS_COLLECTION_PATH}/${LOCAL_EXPORTS_NAME}`, { body })
      : this.client.request<RecordConfigMap>("POST", VERDICTS_COLLECTION_PATH, { body }));
    this.remember({ ...answer, data });
  }

  private remember(cm: RecordConfigMap | undefined): void {
    const rv = cm?.metadata?.resourceVersion;
    this.seen = {
      exists: cm !== undefined,
      text: cm?.data?.[LOCAL_EXPORTS_KEY] ?? EMPTY!,
      ...(rv ? { resourceVersion: rv } : {}),
    };
  }
}

/** The record in memory: for tests and the benchmark, which play kcp without a dep-ctrl workspace. */
export class ExportRecordInMemory implements ExportRecord {
  exports: DependentExport[] = [];
  writes = 0;

  read(): Promise<DependentExport[]> {
    return Promise.resolve([...this.exports]);
  }

  write(exports: readonly DependentExport[]): Promise<void> {
    const text = (e: readonly DependentExport[]) => exportRecordData(e)[LOCAL_EXPORTS_KEY];
    if (text(exports) !== text(this.exports)) {
      this.exports = [...exports];
      this.writes++;
    }
    return Promise.resolve();
  }
}
