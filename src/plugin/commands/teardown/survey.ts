// Asking kcp what blocks what, with nothing but the user's rights: a server-side dry-run DELETE of each object whose
// type some rule protects (a bounded number at a time; of every object when the rules cannot all be read), the
// webhook's causes read back into edges to the objects they name. Only a rule's dependency type is ever refused by
// protection, so an object of any other type needs no dry run: it has no blockers.
import type { DeleteAnswer, Refusal } from "../../causes.ts";
import { dependenciesOf } from "../../graph.ts";
import { listingKey } from "../../references.ts";
import type { RuleScan } from "../../rules.ts";
import { mapLimit } from "../../../util/concurrency.ts";
import { planTeardown, push, type BlockEdge, type Obstacle, type Plan, type PlanObject } from "./plan.ts";

/** The I/O teardown needs; kcp-api.ts implements it against kcp, tests with a map. */
export interface TeardownApi {
  /** Every object in scope, as it is now. */
  list(): Promise<PlanObject[]>;
  /** A server-side dry-run DELETE. */
  dryRun(o: PlanObject): Promise<DeleteAnswer>;
  delete(o: PlanObject): Promise<DeleteAnswer>;
  /** The object as it is now; undefined once gone. */
  get(o: PlanObject): Promise<PlanObject | undefined>;
  /**
   * Sets (`on`) or removes the skip-protection annotation, only on objects the user named, and only on the very
   * object listed (its uid a precondition): "replaced" when it is gone or another object now has its name.
   */
  annotate(o: PlanObject, on: boolean): Promise<"done" | "replaced">;
}

const key = (kind: string, namespace: string | undefined, name: string): string => `${kind}/${namespace ?? ""}/${name}`;

/** kind/namespace/name → ids (one kind may be served by two groups). */
export function indexByKind(objects: readonly PlanObject[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const o of objects) {
    const k = key(o.kind, o.namespace, o.name);
    push(out, k, o.id);
  }
  return out;
}

/** The ids a refusal's blockers name, and those not among the objects (said as the webhook said them). */
export function resolveBlockers(
  target: PlanObject,
  refusal: Refusal,
  byKind: ReadonlyMap<string, string[]>,
): { edges: BlockEdge[]; outside: string[] } {
  const edges: BlockEdge[] = [];
  const outside: string[] = [];
  for (const b of refusal.blockers) {
    // `Kind/name` is a dependent in the target's namespace, or a cluster-scoped one.
    const ids =
      byKind.get(key(b.kind, b.namespace ?? target.namespace, b.name)) ??
      (b.namespace === undefined ? byKind.get(key(b.kind, undefined, b.name)) : undefined);
    if (!ids) {
      const ns = b.namespace ?? target.namespace;
      outside.push(ns ? `${b.kind}/${ns}/${b.name}` : `${b.kind}/${b.name}`);
      continue;
    }
    for (const from of ids) edges.push({ from, to: target.id, ...(b.field ? { field: b.field } : {}) });
  }
  return { edges, outside };
}

/** A refusal that names no blocker, in one line. */
export function refusalText(status: number, r: Refusal): string {
  return `delete refused (${status}${r.reason ? ` ${r.reason}` : ""}): ${r.message || "no message"}`;
}

/**
 * A DELETE (dry run or real), asked again once when kcp gave no answer (a timeout, a reset connection): one slow
 * answer among thousands should not end a plan or a run. Asking a real DELETE twice is safe: its uid precondition
 * keeps it to the object listed. A second failure becomes a refusal that names no blocker, so the object is
 * reported as stuck with the reason instead of the whole command failing.
 */
export async function askOnce(ask: () => Promise<DeleteAnswer>, what: string): Promise<DeleteAnswer> {
  let last: unknown;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return await ask();
    } catch (err) {
      last = err;
    }
  }
  const message = `no answer to ${what}: ${(last as Error)?.message ?? String(last)}`;
  return {
    outcome: "refused",
    status: 0,
    refusal: { code: 0, reason: "", message, blockers: [], source: "none", complete: false },
  };
}

/**
 * The types protection can refuse a delete of: every valid dependency of every rule read. Undefined when that set may
 * be short (a workspace or a rule that could not be read or parsed): then every type has to be dry-run.
 */
export function protectedTypes(scan: Pick<RuleScan, "rules" | "objects" | "skipped">): Set<string> | undefined {
  if (scan.skipped.length > 0 || scan.rules.length !== scan.objects.length) return undefined;
  return new Set(
    scan.rules.flatMap(({ rule }) => dependenciesOf(rule).map((d) => listingKey(d.target.group, d.target.resource))),
  );
}

/**
 * Dry-runs every object not yet deleting whose type is protected (every such object when `protects` is undefined)
 * and plans from what the refusals name.
 */
export async function survey(
  api: TeardownApi,
  objects: readonly PlanObject[],
  concurrency: number,
  protects?: ReadonlySet<string>,
): Promise<{ plan: Plan; dryRuns: number }> {
  const byKind = indexByKind(objects);
  const edges: BlockEdge[] = [];
  const obstacles = new Map<string, Obstacle>();
  const asked = objects.filter(
    (o) => !o.deleting && !o.skipProtection && (protects?.has(listingKey(o.group, o.resource)) ?? true),
  );
  const answers = await mapLimit(asked, concurrency, (o) => askOnce(() => api.dryRun(o), "a dry-run DELETE"));
  asked.forEach((o, i) => {
    const a = answers[i]!;
    if (a.outcome !== "refused") return;
    const found = resolveBlockers(o, a.refusal, byKind);
    edges.push(...found.edges);
    if (found.outside.length > 0) obstacles.set(o.id, { outside: found.outside });
    else if (a.refusal.blockers.length === 0) obstacles.set(o.id, { refused: refusalText(a.status, a.refusal) });
  });
  return { plan: planTeardown(objects, edges, obstacles), dryRuns: asked.length };
}
