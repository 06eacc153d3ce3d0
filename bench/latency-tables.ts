// Phase 1's tables: DELETE latency, the ratios, CPU per operation and the lookup page-size probe.
import { DEFAULT_PAGE_SIZE } from "../src/webhook/deletion/live.ts";
import type { LatencyResult } from "./latency.ts";
import { f, sumRow, table, x } from "./table.ts";

export function latencyTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  for (const r of results) {
    const n = String(r.n);
    rows.push(sumRow(n, "DELETE protected, allowed", r.summary.protectedAllowed));
    rows.push(sumRow("", "DELETE protected, denied (ref on last page)", r.summary.protectedDenied));
    rows.push(sumRow("", "DELETE unprotected (kcp alone)", r.summary.unprotected));
    rows.push(sumRow("", `bare paginated LIST of the VMs (limit ${DEFAULT_PAGE_SIZE})`, r.summary.bareList));
    rows.push(sumRow("", "DELETE protected, allowed, right after a write", r.summary.afterWriteDelete));
    rows.push(sumRow("", "bare LIST, right after a write", r.summary.afterWriteList));
    for (const [label, h] of [
      ["webhook decision, allowed ~", r.webhook.allowed],
      ["webhook decision, denied ~", r.webhook.denied],
      ["webhook decision, allowed right after a write ~", r.webhook.afterWrite],
    ] as const) {
      rows.push(["", label, String(h.count), f(h.p50Ms), f(h.p95Ms), f(h.p99Ms), f(h.meanMs)]);
    }
  }
  return table(["N", "series", "n", "p50", "p95", "p99", "mean"], rows);
}

export function pageSizeTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  for (const r of results) {
    for (const [i, p] of (r.pageSizeProbe ?? []).entries()) {
      const k = p.kcpPerList;
      rows.push([
        i === 0 ? String(r.n) : "",
        String(p.limit),
        String(p.summary.n),
        f(p.summary.p50),
        f(p.summary.mean),
        f(p.cpuMsPerOp.kcp),
        f(p.cpuMsPerOp.client),
        k ? f(k.cacheLists, 0) : "–",
        k ? f(k.cacheEvaluated, 0) : "–",
        k ? f(k.storageLists, 0) : "–",
        k ? f(k.storageFetched, 0) : "–",
      ]);
    }
  }
  return table(
    [
      "N",
      "limit",
      "n",
      "p50",
      "mean",
      "kcp CPU",
      "lookup CPU",
      "cache pages",
      "cache objs evaluated",
      "etcd pages",
      "etcd objs fetched",
    ],
    rows,
  );
}

export function ratioTable(results: LatencyResult[]): string {
  const rows = results.map((r) => [
    String(r.n),
    "",
    x(r.ratios.allowedOverUnprotected.p50),
    x(r.ratios.allowedOverUnprotected.p95),
    x(r.ratios.allowedOverUnprotected.p99),
    x(r.ratios.deniedOverUnprotected.p50),
    x(r.ratios.decisionOverList.allowedMean),
    x(r.ratios.decisionOverList.deniedMean),
    x(r.ratios.afterWriteOverSettled),
    f(r.summary.protectedAllowed.mean - r.summary.unprotected.mean - r.webhook.allowed.meanMs),
  ]);
  return table(
    [
      "N",
      "",
      "prot/unprot p50",
      "p95",
      "p99",
      "denied/unprot p50",
      "decision/LIST mean (allowed)",
      "(denied)",
      "after-write/settled p50",
      "call overhead ms",
    ],
    rows,
  );
}

export function cpuTable(results: LatencyResult[]): string {
  const rows: string[][] = [];
  const row = (n: string, what: string, c: { kcp: number; webhook: number; client: number }, wall: number) => [
    n,
    what,
    f(wall),
    f(c.kcp),
    f(c.webhook),
    f(c.client),
  ];
  for (const r of results) {
    const c = r.cpuMsPerOp;
    rows.push(row(String(r.n), "DELETE protected, allowed", c.protectedAllowed, r.summary.protectedAllowed.mean));
    rows.push(row("", "DELETE protected, denied", c.protectedDenied, r.summary.protectedDenied.mean));
    rows.push(row("", "DELETE unprotected", c.unprotected, r.summary.unprotected.mean));
    rows.push(row("", `bare LIST (limit ${DEFAULT_PAGE_SIZE})`, c.bareList, r.summary.bareList.mean));
    rows.push(row("", "DELETE allowed, after a write", c.afterWriteDelete, r.summary.afterWriteDelete.mean));
    rows.push(row("", "bare LIST, after a write", c.afterWriteList, r.summary.afterWriteList.mean));
  }
  const per = (x: { reads: number; waitMs: number }) => `${f(x.waitMs / x.reads)} ms over ${x.reads} reads`;
  const waits = results.flatMap((r) =>
    r.kcpCacheWait
      ? [
          `N=${r.n}: kcp watch-cache freshness wait per VM LIST (lookups and bare LISTs): ` +
            `settled ${per(r.kcpCacheWait.settled)}; right after a write ${per(r.kcpCacheWait.afterWrite)}`,
        ]
      : [],
  );
  return [table(["N", "operation", "wall mean", "kcp CPU", "webhook CPU", "client CPU"], rows), ...waits].join("\n");
}
