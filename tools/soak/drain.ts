// The end of a run: after the load stops, wait (up to the bound) until what was asked has happened, so the checker
// judges a settled history rather than one cut off mid-deletion.
import { RULE_RESOURCE, WORKSPACE_RESOURCE } from "./checker.ts";
import type { History } from "./history.ts";
import { sleep } from "./oplog.ts";

/** Waits until namespace and workspace deletions are done, protection is back and every rule is Ready. */
export async function drain(history: History, o: { boundMs: number; log: (line: string) => void }): Promise<void> {
  o.log("draining: waiting (up to the bound) for namespace and workspace deletions, protection, and every rule Ready");
  const deadline = Date.now() + o.boundMs;
  while (Date.now() < deadline) {
    if (pendingDeletions(history) === 0 && lastProbeDenied(history) && rulesSettled(history)) break;
    await sleep(2000);
  }
}

/** Namespace and workspace deletions we sent whose object has not gone yet. */
function pendingDeletions(h: History): number {
  let pending = 0;
  for (const op of h.ops) {
    if ((op.kind !== "delete-namespace" && op.kind !== "delete-workspace") || op.status < 200 || op.status >= 300)
      continue;
    const cluster = op.kind === "delete-namespace" ? op.cluster : "root";
    const resource = op.kind === "delete-namespace" ? "namespaces" : WORKSPACE_RESOURCE;
    const gone = h.watches.some(
      (w) =>
        w.type === "DELETED" &&
        w.cluster === cluster &&
        w.resource === resource &&
        w.name === op.name &&
        w.recvAt >= op.sentAt,
    );
    if (!gone) pending++;
  }
  return pending;
}

function lastProbeDenied(h: History): boolean {
  const probes = h.ops.filter((o) => o.kind === "probe");
  return probes.at(-1)?.status === 409;
}

/** Every rule's latest state is Ready for its generation (or the rule is gone). */
function rulesSettled(h: History): boolean {
  const last = new Map<string, History["watches"][number]>();
  for (const w of h.watches) if (w.resource === RULE_RESOURCE) last.set(`${w.cluster}/${w.name}`, w);
  return [...last.values()].every((w) => {
    if (w.type === "DELETED") return true;
    const gen = (w.object["metadata"] as { generation?: number } | undefined)?.generation;
    const conds = (w.object["status"] as { conditions?: Record<string, unknown>[] } | undefined)?.conditions ?? [];
    const ready = conds.find((c) => c["type"] === "Ready");
    return ready?.["status"] === "True" && ready["observedGeneration"] === gen;
  });
}
