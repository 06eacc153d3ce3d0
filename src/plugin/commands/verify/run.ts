// `kubectl dependencies verify`, the thin I/O: read the rules, list the workspace's objects of every type they name,
// dry-run DELETE every object of a dependency type, and compare (compare.ts). What a first pass finds is checked
// again after a short pause, and only what persists is reported: tenants keep working while a periodic job runs.
import { SKIP_PROTECTION_ANNOTATION } from "../../../api/types.ts";
import { realClock, type Clock } from "../../../util/clock.ts";
import { mapLimit } from "../../../util/concurrency.ts";
import { collectionPath, type ApiResource } from "../../discovery.ts";
import type { RuleInWorkspace } from "../../graph.ts";
import { annotated, objectId, objectOf } from "../../objects.ts";
import { findReferences } from "../../references.ts";
import { listRuleTypes, rulesWithNotes } from "../../rules.ts";
import { dryRunDelete, explain, withSession, type Connection, type Session } from "../../session.ts";
import {
  confirmed,
  exitCodeOf,
  expectedByObject,
  verdictFor,
  type Finding,
  type Verdict,
  type VerifyObject,
  type VerifyReport,
} from "./compare.ts";
import type { CommandResult } from "../../contract.ts";
import { renderJson, renderText } from "./render.ts";

/** The parsed command line this runs (command.ts parses it). */
export type VerifyFormat = "text" | "json";

export interface VerifyCommand {
  name: "verify";
  format: VerifyFormat;
  /** Workspaces to read rules from; empty: every readable workspace below `root`. */
  ruleWorkspaces: string[];
  connection: Connection;
}

export interface VerifyDeps {
  clock?: Clock;
  /** Pause before the second look at what the first pass found. */
  recheckAfterMs?: number;
  /** Dry runs in flight at once. */
  concurrency?: number;
}

function verifyObjectOf(r: ApiResource, item: unknown): VerifyObject | undefined {
  const found = objectOf(r, item);
  return found && { ...found.ref, skipProtection: annotated(found.meta, SKIP_PROTECTION_ANNOTATION) };
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
    .flatMap((t) => t.items.map((i) => ({ resource: t.resource, object: verifyObjectOf(t.resource, i) })))
    .filter((o): o is { resource: ApiResource; object: VerifyObject } => o.object !== undefined)
    .filter((o) => !only || only.has(objectId(o.object)));
  const verdicts = new Map<string, Verdict>();
  let referenced = 0;
  await mapLimit(objects, concurrency, async ({ resource, object }) => {
    const key = objectId(object);
    const want = expected.get(key) ?? [];
    const path = `${collectionPath(resource, object.namespace)}/${encodeURIComponent(object.name)}`;
    const answer = await dryRunDelete(s, path);
    // Gone since the listing: nothing to verify.
    if (answer.outcome === "gone") return;
    if (want.length > 0 && !object.skipProtection) referenced++;
    verdicts.set(key, verdictFor(object, want, answer));
  });
  return { verdicts, checked: verdicts.size, referenced };
}

export async function runVerify(cmd: VerifyCommand, deps: VerifyDeps = {}): Promise<CommandResult> {
  const clock = deps.clock ?? realClock;
  const concurrency = deps.concurrency ?? 8;
  return withSession(cmd.connection, async (s) => {
    const { scan, notes } = await rulesWithNotes(s, cmd.ruleWorkspaces);
    if (scan.rules.length === 0) return { exitCode: 2, text: "", notes };
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
      const keys = new Set(found.map((v) => objectId("mismatch" in v ? v.mismatch.object : v.unverified.object)));
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
  });
}
