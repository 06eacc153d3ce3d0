// teardown's run: open the user's session, find the types to take down (bound, and Secrets and ConfigMaps), then either print the plan
// (--plan) or run it and print its report. Exit code 0: planned / done; 1: the plan cannot be completed, or the run
// left something (the report names it).
import { realClock, type Clock } from "../../../util/clock.ts";
import type { CommandResult } from "../../contract.ts";
import { withSession, type Connection, type Session } from "../../session.ts";
import { executeTeardown } from "./execute.ts";
import type { Plan } from "./plan.ts";
import { planJson, planTable, type PlanContext } from "./render.ts";
import { reportJson, reportText } from "./report.ts";
import { kcpTeardownApi, namedIds, teardownTypes, type Scope } from "./kcp-api.ts";
import { readRules } from "../../rules.ts";
import { protectedTypes, survey, type TeardownApi } from "./survey.ts";

/** The parsed command line this runs (command.ts parses it). */
export type PlanFormat = "table" | "json";

export interface TeardownCommand {
  name: "teardown";
  /** One namespace; undefined: the whole workspace (--workspace given, no -n). */
  namespace?: string;
  plan: boolean;
  format: PlanFormat;
  timeoutMs: number;
  concurrency: number;
  /** `<resource>/<name>` the user allows skip-protection for. */
  skipProtection: string[];
  /** A whole-workspace run goes without asking. */
  yes: boolean;
  /** --rule-workspace: where --plan reads the rules (else walking from root). */
  ruleWorkspaces: string[];
  connection: Connection;
}

export async function runTeardown(
  cmd: TeardownCommand,
  progress: (line: string) => void,
  clock: Clock = realClock,
): Promise<CommandResult> {
  return withSession(cmd.connection, async (s) => {
    const scope: Scope = cmd.namespace !== undefined ? { namespace: cmd.namespace } : { workspace: true };
    const ctx: PlanContext = {
      workspace: s.workspace,
      ...(cmd.namespace !== undefined ? { namespace: cmd.namespace } : {}),
    };
    const types = await teardownTypes(s);
    const api = kcpTeardownApi(s, scope, types, namedIds(cmd.skipProtection, types, cmd.namespace), progress);
    if (cmd.plan) {
      const { plan } = await planScope(s, api, cmd.concurrency, progress, cmd.ruleWorkspaces);
      const text = cmd.format === "json" ? planJson(plan, ctx) : planTable(plan, ctx);
      return { exitCode: plan.stuck.length === 0 ? 0 : 1, text };
    }
    const report = await executeTeardown(api, {
      concurrency: cmd.concurrency,
      timeoutMs: cmd.timeoutMs,
      clock,
      progress,
    });
    // Non-zero whenever anything is left; the report says what and why.
    const now = clock.now();
    const text = cmd.format === "json" ? reportJson(report, ctx, now) : reportText(report, ctx, now);
    return { exitCode: report.ok ? 0 : 1, text };
  });
}

/**
 * The plan of what `api` lists: the rules the user may read say which types protection can refuse, and only objects
 * of those types are dry-run. The rules are read from `ruleWorkspaces` (--rule-workspace), else from every workspace
 * below root the user may list. When they cannot all be read (a workspace the user may not list or read, a rule that
 * does not parse), every object is dry-run, as protection could refuse any type.
 */
export async function planScope(
  s: Session,
  api: TeardownApi,
  concurrency: number,
  progress: (line: string) => void,
  ruleWorkspaces: readonly string[] = [],
): Promise<{ plan: Plan; dryRuns: number }> {
  const scan = await readRules(s, ruleWorkspaces, true);
  const protects = protectedTypes(scan);
  if (!protects) {
    for (const skipped of scan.skipped) progress(skipped);
    const hint = ruleWorkspaces.length === 0 ? " (name the workspaces whose rules you may read: --rule-workspace)" : "";
    progress(`not every DependencyRule is readable: dry-running every object${hint}`);
  }
  return survey(api, await api.list(), concurrency, protects);
}
