// `kubectl dependencies verify`, the thin I/O: read the rules, list the workspace's objects of every type they name,
// dry-run DELETE every object of a dependency type, and compare (compare.ts). What a first pass finds is checked
// again after a short pause, and only what persists is reported: tenants keep working while a periodic job runs.
import { SKIP_PROTECTION_ANNOTATION } from "../../api/types.ts";
import { isRecord } from "../../util/json.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import { mapLimit } from "../../util/concurrency.ts";
import { collectionPath, type ApiResource } from "../discovery.ts";
import type { RuleInWorkspace } from "../graph.ts";
import { findReferences } from "../references.ts";
import { dryRunDelete, explain, listRuleTypes, openSession, readRules, type Session } from "../source.ts";
import {
  confirmed,
  exitCodeOf,
  expectedByObject,
  objectKey,
  verdictFor,
  type Finding,
  type Verdict,
  type VerifyObject,
  type VerifyReport,
} from "./compare.ts";
import type { VerifyCommand } from "./command.ts";
import { renderJson, renderText } from "./render.ts";

export interface VerifyResult {
  exitCode: 0 | 1 | 2;
  text: string;
  notes: string[];
}

export interface VerifyDeps {
  clock?: Clock;
  /** Pause before the second look at what the first pass found. */
  recheckAfterMs?: number;
  /** Dry runs in flight at once. */
  concurrency?: number;
}

function objectOf(r: ApiResource, item: unknown): VerifyObject | undefined {
  const meta = isRecord(item) && isRecord(item["metadata"]) ? item["metadata"] : {};
  const ann = isRecord(meta["annotations"]) ? meta["annotations"] : {};
  if (typeof meta["name"] !== "string" || meta["name"] === "") return undefined;
  const o: VerifyObject = {
    group: r.group,
    resource: r.name,
    kind: r.kind,
    name: meta["name"],
    skipProtection: ann[SKIP_PROTECTION_ANNOTATION] === "true",
  };
  if (typeof meta["namespace"] === "string" && meta["namespace"] !== "") o.namespace = meta["namespace"];
  return o;
}

/** One pass: list, expect, dry-run (only the objects `only` names, when given), judge. */
async function pass(
  s: Session,
  rules: readonly RuleInWorkspace[],
  concurrency: number,
  only?: ReadonlySet<string>,
): Promise<{ verdicts: Map<string, Verdict>; checked: number; referenced: number }> {
  const listed = await listRuleTypes(s, rules);
  // Warn rules never refuse: an object only they reference must be allowed.
  const deny = rules.filter((r) => r.rule.enforcement === "Deny");
  const expected = expectedByObject(findReferences(deny, listed.listings));
  const objects = listed.targets
    .flatMap((t) => t.items.map((i) => ({ resource: t.resource, object: objectOf(t.resource, i) })))
    .filter((o): o is { resource: ApiResource; object: VerifyObject } => o.object !== undefined)
    .filter((o) => !only || only.has(objectKey(o.object)));
  const verdicts = new Map<string, Verdict>();
  let referenced = 0;
  await mapLimit(objects, concurrency, async ({ resource, object }) => {
    const key = objectKey(object);
    const want = expected.get(key) ?? [];
    const path = `${collectionPath(resource, object.namespace)}/${encodeURIComponent(object.name)}`;
    const answer = await dryRunDelete(s, path);
    // Gone since the listing: nothing to verify.
    if (!("allowed" in answer) && answer.status === 404) return;
    if (want.length > 0 && !object.skipProtection) referenced++;
    verdicts.set(
      key,
      verdictFor(object, want, "allowed" in answer ? { allowed: true } : { allowed: false, ...answer }),
    );
  });
  return { verdicts, checked: verdicts.size, referenced };
}

export async function runVerify(cmd: VerifyCommand, deps: VerifyDeps = {}): Promise<VerifyResult> {
  const clock = deps.clock ?? realClock;
  const concurrency = deps.concurrency ?? 8;
  const s = openSession(cmd.connection);
  try {
    const scan = await readRules(s, cmd.ruleWorkspaces);
    const notes = [...scan.skipped];
    if (scan.rules.length === 0) {
      notes.push(
        `no DependencyRules readable in ${scan.searched.length} workspace(s): name them with --rule-workspace`,
      );
      return { exitCode: 2, text: "", notes };
    }
    const check = (only?: ReadonlySet<string>) =>
      pass(s, scan.rules, concurrency, only).catch((err: unknown) => {
        throw explain(err, `verify ${s.workspace}`);
      });
    const first = await check();
    // Sorted by object, so the report reads the same run after run.
    let found = [...first.verdicts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, v]) => v)
      .filter((v): v is Finding => !v.ok);
    if (found.length > 0) {
      await clock.sleep(deps.recheckAfterMs ?? 2_000);
      const keys = new Set(found.map((v) => objectKey("mismatch" in v ? v.mismatch.object : v.unverified.object)));
      found = confirmed(found, (await check(keys)).verdicts);
    }
    const report: VerifyReport = {
      workspace: s.workspace,
      rules: scan.rules.map((r) => `${r.workspace}:${r.rule.key.name}`).sort(),
      checked: first.checked,
      referenced: first.referenced,
      mismatches: found.flatMap((v) => ("mismatch" in v ? [v.mismatch] : [])),
      unverified: found.flatMap((v) => ("unverified" in v ? [v.unverified] : [])),
    };
    return {
      exitCode: exitCodeOf(report),
      text: cmd.format === "json" ? renderJson(report) : renderText(report),
      notes,
    };
  } finally {
    s.base.close();
  }
}
