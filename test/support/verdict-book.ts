// An in-memory verdict store for reconciler tests: what the last pass kept is what the next one reads, as with the
// ConfigMaps in the dep-ctrl workspace; `writes` counts the passes that changed something.
import type { Verdicts } from "../../src/api/verdicts.ts";
import { NO_VERDICTS } from "../../src/api/verdicts.ts";
import { verdictBuckets } from "../../src/api/verdict-configmaps.ts";
import type { VerdictBook } from "../../src/controller/reconciler.ts";

export class MemoryVerdictBook implements VerdictBook {
  kept: Verdicts = NO_VERDICTS;
  writes = 0;
  synced = true;

  hasSynced(): boolean {
    return this.synced;
  }

  current(): Verdicts {
    return this.kept;
  }

  write(want: Verdicts): Promise<{ kind: "written"; buckets: number }> {
    const before = verdictBuckets(this.kept);
    const after = verdictBuckets(want);
    const changed = after.filter((b, i) => b !== before[i]).length;
    if (changed > 0) this.writes++;
    this.kept = want;
    return Promise.resolve({ kind: "written", buckets: changed });
  }
}
