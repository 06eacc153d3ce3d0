// The rule verdicts in kcp (src/api/verdicts.ts): an informer on the verdict ConfigMaps in the dep-ctrl workspace,
// which the webhook decides from and every controller replica keeps warm (so a new leader starts from what the last
// one wrote), and the controller's writes of the buckets that changed. The leader is their one writer, so what it wrote last is what is there: it is
// used until the informer catches up, and a conflict (another leader was quicker) drops it and the pass runs again.
import type { Logger } from "pino";
import { Informer, type KubeObject } from "./informer.ts";
import { isApiError, type RestClient } from "./rest.ts";
import {
  bucketOfConfigMap,
  parseVerdicts,
  verdictBuckets,
  verdictConfigMap,
  verdictsName,
  VERDICTS_COLLECTION_PATH,
  VERDICTS_KEY,
  VERDICTS_LABEL,
} from "../api/verdict-configmaps.ts";
import type { Verdicts } from "../api/verdicts.ts";

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

interface Held {
  data: string;
  resourceVersion?: string;
}

export type VerdictWrite =
  { kind: "written"; buckets: number } | { kind: "conflict" } | { kind: "failed"; error: string };

export class VerdictStore {
  private readonly informer: Informer<ConfigMapObject>;
  private readonly client: RestClient;
  /** What this process wrote, per bucket, until the informer shows it. */
  private readonly written = new Map<number, Held>();

  constructor(opts: { client: RestClient; logger: Logger; onChange: () => void }) {
    this.client = opts.client;
    this.informer = new Informer<ConfigMapObject>({
      client: opts.client,
      path: VERDICTS_COLLECTION_PATH,
      query: { labelSelector: `${VERDICTS_LABEL}=true` },
      logger: opts.logger.child({ informer: "rule-verdicts" }),
      onChange: opts.onChange,
    });
  }

  start(): void {
    this.informer.setEndpoints([this.client.baseUrl]);
  }

  stop(): void {
    this.informer.stop();
  }

  hasSynced(): boolean {
    return this.informer.endpoints().length > 0 && this.informer.hasSynced();
  }

  /** Every bucket as it is now: what this process wrote where the informer has not caught up, else the informer's. */
  private held(): Map<number, Held> {
    const out = new Map<number, Held>();
    for (const cm of this.informer.list()) {
      const bucket = bucketOfConfigMap(cm);
      if (bucket === undefined) continue;
      const rv = cm.metadata.resourceVersion;
      out.set(bucket, { data: cm.data?.[VERDICTS_KEY] ?? "", ...(rv ? { resourceVersion: rv } : {}) });
    }
    // The informer lags this process's own writes; another writer (a second leader for a moment) shows up as a
    // conflict at the next write, which drops what was held.
    for (const [bucket, mine] of this.written) {
      if (out.get(bucket)?.data === mine.data) this.written.delete(bucket);
      else out.set(bucket, mine);
    }
    return out;
  }

  /** Forgets this process's own writes (on becoming leader: the informer shows what the last leader wrote). */
  forget(): void {
    this.written.clear();
  }

  current(): Verdicts {
    return parseVerdicts([...this.held().values()].map((h) => ({ data: { [VERDICTS_KEY]: h.data } })));
  }

  /** Writes the buckets whose data differs from `want`; an empty bucket that does not exist is not created. */
  async write(want: Verdicts, mayWrite: () => boolean): Promise<VerdictWrite> {
    const held = this.held();
    const wanted = verdictBuckets(want);
    const empty = verdictBuckets({ rules: new Map(), paths: new Map() })[0];
    let buckets = 0;
    for (const [bucket, data] of wanted.entries()) {
      const have = held.get(bucket);
      if (have ? have.data === data : data === empty) continue;
      if (!mayWrite()) return { kind: "conflict" };
      try {
        const body = verdictConfigMap(bucket, data, have?.resourceVersion);
        const answer = await (have
          ? this.client.request<KubeObject>("PUT", `${VERDICTS_COLLECTION_PATH}/${verdictsName(bucket)}`, { body })
          : this.client.request<KubeObject>("POST", VERDICTS_COLLECTION_PATH, { body }));
        const rv = answer?.metadata?.resourceVersion;
        this.written.set(bucket, { data, ...(rv ? { resourceVersion: rv } : {}) });
        buckets++;
      } catch (err) {
        this.written.delete(bucket);
        if (isApiError(err, 409)) return { kind: "conflict" };
        return { kind: "failed", error: (err as Error).message };
      }
    }
    return { kind: "written", buckets };
  }
}
