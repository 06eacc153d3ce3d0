// Hand-made soak histories for the checker's unit tests: a rule as the recorder sees it, a delete as a worker logs
// it, and a history with quiet defaults around them.
import { RULE_RESOURCE } from "../../tools/soak/checker.ts";
import type { History, OpRecord, WatchRecord } from "../../tools/soak/history.ts";

interface RuleRef {
  group: string;
  resource: string;
  version: string;
  fieldRef: { path: string };
}

/** A Ready DependencyRule in `cluster`, as the recorder's first list (INITIAL) reports it. */
export function ruleRecord(
  cluster: string,
  name: string,
  dependent: { group: string; resource: string; kind: string; version: string; apiExportName?: string },
  dependencies: RuleRef[],
): WatchRecord {
  return {
    type: "INITIAL",
    shard: "root",
    cluster,
    resource: RULE_RESOURCE,
    namespace: "",
    name,
    rv: 1,
    recvAt: 0,
    object: {
      metadata: { name, generation: 1 },
      spec: { dependent, dependencies },
      status: { conditions: [{ type: "Ready", status: "True", observedGeneration: 1 }] },
    },
  };
}

let nextId = 1;
/** One worker operation, answered 100 ms after it was sent. */
export function opRecord(
  fields: Pick<OpRecord, "kind" | "cluster" | "workspace" | "resource" | "namespace" | "name" | "sentAt" | "status">,
  message = "",
): OpRecord {
  return { id: nextId++, worker: "t", ...fields, answeredAt: fields.sentAt + 100, message };
}

/** A history of `ops` and `watches` with no faults, exits or gaps unless given. */
export function historyOf(fields: Partial<History> & Pick<History, "watches" | "ops" | "endedAt" | "mode">): History {
  return {
    seed: 1,
    startedAt: 0,
    windowMs: 5000,
    boundMs: 30_000,
    weakened: false,
    workspaces: {},
    faults: [],
    exits: [],
    window: [],
    gaps: [],
    ...fields,
  };
}
