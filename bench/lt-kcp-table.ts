// Table 8 of `npm run bench`: local targets on kcp (bench/lt-kcp.ts).
import type { LocalTargetsResult } from "./lt-kcp.ts";
import { f, table } from "./table.ts";

const kcpCell = (kcp: Record<string, number>, verb: string): string =>
  Object.entries(kcp)
    .filter(([k]) => k.startsWith(`${verb} `))
    .map(([k, v]) => `${v} ${k.slice(verb.length + 1)}`)
    .join(", ") || "0";

export function localTargetsTable(r: LocalTargetsResult): string {
  const rows = r.steps.map((s) => [
    s.step,
    s.ms === undefined ? "" : f(s.ms / 1000, 1),
    String(s.passes),
    `${s.writes.create}/${s.writes.update}/${s.writes.delete}`,
    kcpCell(s.kcp, "LIST"),
    kcpCell(s.kcp, "WATCH"),
    ["POST", "PUT", "DELETE"].map((v) => kcpCell(s.kcp, v)).join(" | "),
    String(s.vwcs),
  ]);
  const head = ["step", "s", "passes", "writes c/u/d", "kcp LIST", "kcp WATCH", "kcp POST | PUT | DELETE", "VWCs"];
  const mem = r.memory.map(
    (m) =>
      `  ${m.at}: controller RSS ${f(m.controllerRssMiB ?? NaN)} MiB, webhook RSS ${f(m.webhookRssMiB ?? NaN)} MiB, ` +
      `heap ${f(m.webhookHeapMiB ?? NaN)} MiB`,
  );
  const gone = r.exportDeleted;
  return [
    `${r.consumers} consumers (${r.accepting} accepting) + 1 added; set up in ${f(r.setupMs / 1000, 0)} s; ` +
      `load average at the end ${r.loadAverage.map((v) => v.toFixed(2)).join(" ")}`,
    table(head, rows, 1),
    "writes: the controller's counter; kcp: apiserver_request_total deltas (apibindings, validatingwebhookconfigurations;",
    "includes the bench's own 1 s polls through the virtual workspace while a step waits); VWCs: listed at the end",
    ...mem,
    ...(gone
      ? [
          `export deleted: virtual workspace answers bindings "${gone.bindings}", configurations "${gone.vwcs}"`,
          `  controller over ${gone.passes} passes: ${gone.readErrors} read errors, ` +
            `${gone.controllerRunning ? "still running (same pid)" : "NOT running or restarted"}; rule: ${gone.condition}`,
          `  then the rule deleted too: ${gone.readErrorsAfterRuleDeleted} read errors over 2 more passes`,
          ...gone.log.map((l) => `  log: ${l.slice(0, 200)}`),
        ]
      : []),
  ].join("\n");
}
