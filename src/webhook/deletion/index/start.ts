// The dependents index as the webhook runs it: the watches of its dependent types (through the endpoints the allow-list
// lets through, export-endpoints.ts) and the reporter publishing its health for the controller (rule status).
import type { Logger } from "pino";
import type { IndexReport, WebhookSettings } from "../../../api/index-report.ts";
import type { RestClient } from "../../../kcp/rest.ts";
import { DEFAULT_INDEX_MEMORY_LIMIT, type IndexBudget } from "./budget.ts";
import { IndexLedger } from "./ceiling.ts";
import type { IndexEndpointPolicy } from "./export-endpoints.ts";
import { DependentsIndex } from "./index.ts";
import { proberFor } from "../hybrid.ts";
import { LookupBook } from "../lookup-book.ts";
import { reportedLookups } from "../protection.ts";
import type { LookupProber } from "../probe.ts";
import type { Clock } from "../../../util/clock.ts";
import type { TypeHealth } from "./watches.ts";
import { IndexReporter, reportOf, type IndexReporterOptions } from "./report.ts";
import { exportWatchFactory } from "./watches.ts";

/**
 * Starts the index: `report` is the dep-ctrl workspace (where the report is written), `base` where the providers'
 * exports and their slices are read (the kcp base, or --kcp-base-url), and where auto mode's probes list; its
 * shutdown steps are added to `steps`. In auto mode, `book` is where the finder records what answered each lookup
 * (hybrid.ts finderFor): the report publishes what the decision says of it (protection.ts), after the probes.
 */
export function startIndex(
  report: RestClient,
  base: RestClient,
  log: Logger,
  steps: (() => unknown)[],
  o: {
    endpoints: IndexEndpointPolicy;
    budget: Partial<IndexBudget> | undefined;
    /** The replica's index memory ceiling (ceiling.ts); DEFAULT_INDEX_MEMORY_LIMIT when not given. */
    memoryLimit?: number | undefined;
    settings: WebhookSettings;
  },
): { index: DependentsIndex; reporter: IndexReporter; book?: LookupBook } {
  const auto =
    o.settings.lookup === "auto"
      ? autoLookups(
          base,
          () => index.health(),
          log,
          () => reporter.changed(),
        )
      : undefined;
  const reporter = new IndexReporter({
    client: report,
    health: () => index.health(),
    logger: log.child({ part: "index-report" }),
    settings: o.settings,
    ...auto?.report,
  });
  const logger = log.child({ part: "index" });
  const ledger = new IndexLedger({ ceilingBytes: o.memoryLimit ?? DEFAULT_INDEX_MEMORY_LIMIT });
  const index = new DependentsIndex({
    watch: exportWatchFactory(base, logger, {
      endpoints: o.endpoints,
      ledger,
      ...(o.budget ? { budget: o.budget } : {}),
    }),
    ledger,
    logger,
    onChange: () => reporter.changed(),
  });
  reporter.start();
  steps.push(
    () => reporter.stop(),
    () => index.stop(),
  );
  return { index, reporter, ...(auto ? { book: auto.book } : {}) };
}

/**
 * Auto mode's lookup book (what each type's lookups and probes found), its prober (listing through `base`, as live
 * lookups do) and what the index reporter takes of them: the decision's lookups per type and the probes before each
 * report. `changed` is the reporter's: a type's source changed.
 */
export function autoLookups(
  base: RestClient,
  health: () => readonly TypeHealth[],
  log: Logger,
  changed: () => void,
  clock?: Clock,
): { book: LookupBook; prober: LookupProber; report: Pick<IndexReporterOptions, "lookups" | "beforeReport"> } {
  const book = new LookupBook({
    logger: log.child({ part: "lookup" }),
    onChange: changed,
    ...(clock ? { clock } : {}),
  });
  const prober = proberFor(book, () => reportOf(health()), base, log.child({ part: "probe" }));
  const lookups = (states: IndexReport) =>
    reportedLookups("auto", states, (key) => book.learned(key), book.clock.now());
  return { book, prober, report: { lookups, beforeReport: () => prober.run() } };
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
