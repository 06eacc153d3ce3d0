// The notes a report starts with: how the run was set up, and what else shared the machine.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DEFAULT_PAGE_SIZE } from "../src/webhook/deletion/live.ts";
import type { BinariesFrom, LookupMode } from "../tools/kcp/topology.ts";

/** Other kcp servers on this machine (e.g. other engineers' tests): they share the CPUs with this run. */
export function otherKcps(ownPid: number | undefined): number {
  let count = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    if (Number(pid) === ownPid) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (path.basename(cmd[0] ?? "") === "kcp" && cmd[1] === "start") count++;
    } catch {
      // gone meanwhile
    }
  }
  return count;
}

export function notesFor(others: number, from: BinariesFrom, modes: readonly LookupMode[]): string[] {
  return [
    "single-shard kcp: `kcp start` is its own front door, so 'through the front-proxy' means through kcp itself",
    from === "dist"
      ? "binaries: the compiled JavaScript the image runs (dist/cmd/*.js with --enable-source-maps --max-semi-space-size=4)"
      : "binaries: the TypeScript entry points (src/cmd/*.ts, types stripped by Node at load; more memory than the image)",
    `lookup modes: ${modes.join(", ")}; the webhook process is restarted with the other --lookup on the same kcp and ` +
      "port (the controller keeps running); index mode decides from a watch of the VMs through the compute " +
      "provider's APIExport virtual workspace, live mode lists the VMs in the consumer workspace on every DELETE",
    "the client is this process's keep-alive JSON client (one HTTPS connection pool, as kubectl keeps one), " +
      "DELETEs addressed by workspace path (root:consumer1) like kubectl; requests are sequential",
    "unprotected = the controller stopped and its VWC deleted, the rule kept (kcp's own DELETE cost; the webhook " +
      "keeps its index); " +
      "each block starts with --warm-reviews untimed dry-run DELETEs (a warmed webhook, not a fresh process); " +
      "blocks alternate protected/unprotected/unprotected/protected per N and mode; which mode goes first " +
      "alternates with N",
    `bare LIST = the webhook's own identity and URL (logical cluster, namespace, limit=${DEFAULT_PAGE_SIZE}, all pages), ` +
      "parsed as JSON: the floor a live lookup cannot beat (the topology grants both modes' reads for it)",
    "kcp serves the live lookup's LIST from its watch cache as a consistent read, which first waits for the cache " +
      "to be confirmed fresh after any write; settled series leave settle-ms after each write, 'after a write' " +
      "series don't",
    `N fillers reference no target; the denied variant deletes held-vpc, referenced only by zz-held-vm, which ` +
      `sorts last so a live lookup reads every page (the namespace holds N+1 VMs)`,
    `this machine had ${others} other kcp server(s) running at the start (other engineers' tests): ` +
      "timings are noisy; compare figures within this run, not across runs",
  ];
}
