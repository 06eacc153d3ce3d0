// The weakened builds a run may put in place of the real one, and back: the allow-all server (allow-all.ts, --weakened)
// and the status-reading double with the maximal permission policy off (status-reader.ts, --weakened-status; the policy
// alone with --no-status-policy). Each exists to show the checker fires on what it claims to catch.
import type { SoakEnv } from "./env.ts";
import { keyOf, type History } from "./history.ts";
import { RULE_RESOURCE } from "./invariants/timeline.ts";

/** What the weakened builds take of the soak's options (soak.ts). */
export interface WeakOptions {
  weakened: boolean;
  statusPolicy: boolean;
  weakenedStatus: boolean;
  log: (line: string) => void;
}

/** --no-status-policy and --weakened-status: the policy off, and for the latter the status-reading double in front. */
async function weakenStatus(env: SoakEnv, o: WeakOptions, history: History): Promise<void> {
  if (o.weakenedStatus || !o.statusPolicy) {
    o.log("the dep-ctrl export WITHOUT its maximal permission policy: a tenant's forged rule status now lands");
    await env.statusPolicy(false);
  }
  if (o.weakenedStatus) {
    o.log("WEAKENED BUILD: a test double reading rules' status back (status-reader.ts) in front of the replicas");
    await env.readStatusBack(latestRules(history));
  }
}

async function unweakenStatus(env: SoakEnv, o: WeakOptions): Promise<void> {
  if (o.weakenedStatus) await env.readStatusBack(undefined);
  if (o.weakenedStatus || !o.statusPolicy) await env.statusPolicy(true);
}

/** Every rule as kcp's watch last showed it (the recorder's history, read on from where the last call stopped). */
function latestRules(history: History): () => Record<string, unknown>[] {
  const latest = new Map<string, Record<string, unknown> | undefined>();
  let seen = 0;
  return () => {
    for (; seen < history.watches.length; seen++) {
      const w = history.watches[seen];
      if (w?.resource === RULE_RESOURCE) latest.set(keyOf(w), w.type === "DELETED" ? undefined : w.object);
    }
    return [...latest.values()].filter((o) => o !== undefined);
  };
}

/** A weakened build in place of the real one, if the run asks for one (allow-all.ts, status-reader.ts). */
export async function weakBuild(env: SoakEnv, o: WeakOptions, history: History): Promise<void> {
  if (o.weakened) {
    o.log("WEAKENED BUILD: the webhook address now allows every review but every third, refused with 503");
    await env.weaken(true);
  }
  await weakenStatus(env, o, history);
}

/** Back to the real build and the maximal permission policy, if the run weakened either. */
export async function realBuild(env: SoakEnv, o: WeakOptions): Promise<void> {
  if (o.weakened) await env.weaken(false);
  await unweakenStatus(env, o);
}
