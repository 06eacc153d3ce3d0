// Publishes the index's health (src/api/index-report.ts) into the dep-ctrl workspace, where the controller turns it
// into each rule's DependentsIndexed condition. Level-triggered on a work loop: each pass computes the whole report
// and writes only when it differs from what is stored, so a steady index makes no writes.
import type { Logger } from "pino";
import {
  INDEX_REPORT_KEY,
  INDEX_REPORT_PATH,
  indexReportConfigMap,
  type IndexReport,
  type IndexedTypeState,
} from "../../../api/index-report.ts";
import { isApiError } from "../../../kcp/rest.ts";
import type { Clock } from "../../../util/clock.ts";
import { WorkLoop } from "../../../util/workloop.ts";
import type { TypeHealth } from "./watches.ts";

/** The report of the index's types; a 403 anywhere means the provider's consent is missing (the hint to give). */
export function reportOf(health: readonly TypeHealth[]): IndexReport {
  const report: IndexReport = {};
  for (const t of health) {
    const state: IndexedTypeState =
      t.state === "failing"
        ? { state: "failing", reason: t.errors.some((e) => /\b403\b/.test(e)) ? "Forbidden" : "Error" }
        : { state: t.state };
    report[t.type] = state;
  }
  return report;
}

interface ConfigMapClient {
  request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T>;
}

export interface IndexReporterOptions {
  /** Client for the dep-ctrl workspace. */
  client: ConfigMapClient;
  health: () => readonly TypeHealth[];
  logger: Logger;
  clock?: Clock;
}

export class IndexReporter {
  private readonly opts: IndexReporterOptions;
  private readonly loop: WorkLoop;

  constructor(opts: IndexReporterOptions) {
    this.opts = opts;
    this.loop = new WorkLoop({
      pass: () => this.publish(),
      logger: opts.logger,
      resyncMs: 60_000,
      // A type syncs within a second or two; waiting that long saves writing its passing "syncing" state.
      debounceMs: 2_000,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Something in the index changed. */
  changed(): void {
    this.loop.enqueue();
  }

  private async publish(): Promise<void> {
    const want = indexReportConfigMap(reportOf(this.opts.health()));
    let have: { metadata?: { resourceVersion?: string }; data?: Record<string, string> } | undefined;
    try {
      have = await this.opts.client.request("GET", INDEX_REPORT_PATH);
    } catch (err) {
      if (!isApiError(err, 404)) throw err;
    }
    const wantData = (want["data"] as Record<string, string>)[INDEX_REPORT_KEY];
    if (have?.data?.[INDEX_REPORT_KEY] === wantData) return;
    if (have) {
      const rv = have.metadata?.resourceVersion;
      const body = { ...want, metadata: { ...(want["metadata"] as object), ...(rv ? { resourceVersion: rv } : {}) } };
      await this.opts.client.request("PUT", INDEX_REPORT_PATH, { body });
    } else {
      await this.opts.client.request("POST", INDEX_REPORT_PATH.replace(/\/[^/]+$/, ""), { body: want });
    }
    this.opts.logger.info({ report: wantData }, "published the dependents index report");
  }
}
