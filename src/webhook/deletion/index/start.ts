// The dependents index as the webhook runs it: the watches of its dependent types (through the endpoints the allow-list
// lets through, export-endpoints.ts) and the reporter publishing its health for the controller (rule status).
import type { Logger } from "pino";
import type { WebhookSettings } from "../../../api/index-report.ts";
import type { RestClient } from "../../../kcp/rest.ts";
import type { IndexBudget } from "./budget.ts";
import type { IndexEndpointPolicy } from "./export-endpoints.ts";
import { DependentsIndex } from "./index.ts";
import { IndexReporter } from "./report.ts";
import { exportWatchFactory } from "./watches.ts";

/**
 * Starts the index: `report` is the dep-ctrl workspace (where the report is written), `base` where the providers'
 * exports and their slices are read (the kcp base, or --kcp-base-url); its shutdown steps are added to `steps`.
 */
export function startIndex(
  report: RestClient,
  base: RestClient,
  log: Logger,
  steps: (() => unknown)[],
  o: { endpoints: IndexEndpointPolicy; budget: Partial<IndexBudget> | undefined; settings: WebhookSettings },
): { index: DependentsIndex; reporter: IndexReporter } {
  const reporter = new IndexReporter({
    client: report,
    health: () => index.health(),
    logger: log.child({ part: "index-report" }),
    settings: o.settings,
  });
  const logger = log.child({ part: "index" });
  const index = new DependentsIndex({
    watch: exportWatchFactory(base, logger, { endpoints: o.endpoints, ...(o.budget ? { budget: o.budget } : {}) }),
    logger,
    onChange: () => reporter.changed(),
  });
  reporter.start();
  steps.push(
    () => reporter.stop(),
    () => index.stop(),
  );
  return { index, reporter };
}

/**
 * Live mode has no index, but the controller still needs what this replica enforces (a rule's Ready): a report of no
 * types whose settings say live, so no rule gets a DependentsIndexed condition.
 */
export function startLiveReport(
  report: RestClient,
  log: Logger,
  steps: (() => unknown)[],
  settings: WebhookSettings,
): void {
  const reporter = new IndexReporter({
    client: report,
    health: () => [],
    logger: log.child({ part: "index-report" }),
    settings,
  });
  reporter.start();
  steps.push(() => reporter.stop());
}
