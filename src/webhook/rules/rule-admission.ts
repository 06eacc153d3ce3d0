// The apply-time check of a DependencyRule (CREATE and UPDATE, called through the ValidatingWebhookConfiguration
// the controller installs in the dep-ctrl workspace). A rule that cannot be right is refused with the reason: a spec
// the rule model rejects, a dependent its own workspace does not serve, a dependency in its own workspace that the
// export there does not serve. What may still become right later (a provider workspace or APIExport that does not
// exist yet, no consent to read it, kcp unreachable) is allowed with a warning: the controller keeps checking and
// reports on the rule's status. A rule whose own workspace declined the read-only claims is allowed too, with a
// warning that it is not enforced: nobody could check it, so it must not gate anyone's deletes.
//
// About any other workspace the author is told one thing only, whatever went wrong there (unconfirmed()): any tenant
// may dry-run apply rules, and answers that differed would tell it which workspace paths exist in the installation,
// which of them dep-ctrl may read, and what their exports serve. So a dependency elsewhere is never refused, only
// warned about, in words that name nothing but what the author wrote; the real reason goes to the webhook's log.
import {
  checkDependency,
  checkDependent,
  unconfirmed,
  type ExportFacts,
  type ReferenceCheck,
} from "../../api/references.ts";
import { parseRule, type ParsedDependency } from "../../api/rule.ts";
import { createdOf, overCapMessage, type AuthorCaps } from "../../api/rule-cap.ts";
import {
  CLUSTER_ANNOTATION,
  type GroupResource,
  type LogicalClusterName,
  type RuleKey,
  type WorkspacePath,
} from "../../api/types.ts";
import type { Resolution } from "../../kcp/workspaces.ts";
import { parseLogicalClusterName } from "../../api/wire.ts";
import { asRecord } from "../../util/json.ts";
import { logSafe } from "../../observability/clip.ts";
import { realClock, type Clock } from "../../util/clock.ts";
import { notCheckedInTime, RULE_CHECK_DEADLINE_MS, startDeadline } from "./deadline.ts";
import type { Logger } from "pino";
import { allow, invalidRule, type AdmissionRequest, type Decision } from "../admission.ts";

export interface RuleCheckDeps {
  fetchExport(cluster: LogicalClusterName, exportName: string, resources: GroupResource[]): Promise<ExportFacts>;
  resolve(path: WorkspacePath): Promise<Resolution>;
  /** Times the check's deadline (default the real clock), and how long it is (default RULE_CHECK_DEADLINE_MS). */
  clock?: Clock;
  deadlineMs?: number;
  /** The rules per workspace cap (--max-rules-per-workspace) and the rules each author has now (the registry's). */
  authorCap?: { cap: number; caps(): AuthorCaps | undefined };
}

/**
 * A rule that would not be among its workspace's `cap` oldest (src/api/rule-cap.ts, the same queue the registry and
 * the controller use) is refused when created; an update of one already past the cap (it existed before the cap, or
 * came in while this webhook was down) is allowed with a warning that it is not enforced, so it can be fixed or read.
 */
function overCap(request: AdmissionRequest, key: RuleKey, deps: RuleCheckDeps): Decision | undefined {
  const caps = deps.authorCap?.caps();
  if (!deps.authorCap || !caps) return undefined;
  const { cap } = deps.authorCap;
  if (caps.position({ key, created: createdOf(request.object) }) < cap) return undefined;
  if (request.operation === "UPDATE") return allow("rule-unverified", [overCapMessage(cap)]);
  return invalidRule(
    `DependencyRule ${JSON.stringify(key.name)} is refused: its workspace already has ${caps.count(key.cluster)} ` +
      `DependencyRules, and at most ${cap} may be enforced per workspace (--max-rules-per-workspace=${cap})`,
  );
}

/** Only so many refusal reasons are listed; the rest are on the rule's status once applied. */
const MAX_LISTED = 10;

function refuse(name: string, problems: readonly string[]): Decision {
  const listed = problems.slice(0, MAX_LISTED).join("; ");
  const more = problems.length > MAX_LISTED ? ` and ${problems.length - MAX_LISTED} more` : "";
  return invalidRule(`DependencyRule ${JSON.stringify(name)} is invalid: ${listed}${more}`);
}

/** Sorts one check into refusals or warnings. */
function sort(check: ReferenceCheck, refusals: string[], warnings: string[], refuseMissingExport: boolean): void {
  if (check.ok) return;
  if (check.definite && (refuseMissingExport || !check.exportMissing)) refusals.push(check.message);
  else if (check.declined && refuseMissingExport) warnings.push(`${check.message}; ${DECLINED_WARNING}`);
  else warnings.push(check.message);
}

/** A rule whose own workspace declined the read-only claims cannot be checked, so it is not enforced. */
export const DECLINED_WARNING =
  "this rule is NOT enforced until its workspace accepts the read-only claims (its status says so), " +
  "unless the operator runs the webhook with --enforce-unverified-rules";

/** One dependency's check, and what it did not tell the author (for the log, starting with the field). */
interface DependencyAnswer {
  check: ReferenceCheck;
  hidden?: string;
}

/** A dependency checked in full when its path is the rule's own workspace (`own`), else answered by unconfirmed(). */
async function checkOneDependency(
  dep: ParsedDependency,
  own: LogicalClusterName,
  deps: RuleCheckDeps,
): Promise<DependencyAnswer> {
  const r = await deps.resolve(dep.path);
  const not = (hidden: string): DependencyAnswer => ({
    check: { ok: false, definite: false, message: unconfirmed(dep) },
    hidden,
  });
  if (!r.ok) return not(`spec.dependencies[${dep.index}].apiExportRef.path: ${r.reason}`);
  const check = checkDependency(dep, await deps.fetchExport(r.cluster, dep.exportName, [dep.target]));
  if (check.ok || r.cluster === own) return { check };
  return not(check.message);
}

/** The decision, and what its warnings left unsaid about other workspaces (`spec.dependencies[i]...: <reason>`). */
export interface RuleCheck {
  decision: Decision;
  hidden: string[];
}

export async function admitRule(request: AdmissionRequest, deps: RuleCheckDeps): Promise<Decision> {
  return (await checkRule(request, deps)).decision;
}

export async function checkRule(request: AdmissionRequest, deps: RuleCheckDeps): Promise<RuleCheck> {
  const answer = (decision: Decision, hidden: string[] = []): RuleCheck => ({ decision, hidden });
  if (request.operation !== "CREATE" && request.operation !== "UPDATE") return answer(allow("not-delete"));
  const meta = asRecord(asRecord(request.object)?.["metadata"]);
  const name = typeof meta?.["name"] === "string" ? meta["name"] : (request.name ?? "");
  const cluster = parseLogicalClusterName(asRecord(meta?.["annotations"])?.[CLUSTER_ANNOTATION]);
  // kcp sets kcp.io/cluster on the object it sends (verified on v0.30.0); without it the workspace is unknown.
  const keyed = {
    ...asRecord(request.object),
    metadata: { ...meta, name: name || "unnamed", annotations: { [CLUSTER_ANNOTATION]: cluster ?? "unknown" } },
  };
  const rule = parseRule(keyed)!;
  if (rule.problems.length > 0) return answer(refuse(name, rule.problems));
  if (cluster === undefined || !rule.dependent)
    return answer(allow("rule-unverified", ["the rule's workspace is unknown: not checked"]));
  const capped = overCap(request, rule.key, deps);
  if (capped) return answer(capped);

  const refusals: string[] = [];
  const warnings: string[] = [];
  const dependent = rule.dependent;
  const ms = deps.deadlineMs ?? RULE_CHECK_DEADLINE_MS;
  const deadline = startDeadline(deps.clock ?? realClock, ms);
  const dependentFacts = deps.fetchExport(cluster, dependent.apiExportName, [dependent]);
  sort(
    await deadline.within(
      dependentFacts.then((facts) => checkDependent(dependent, facts)),
      () => notCheckedInTime("spec.dependent", ms),
    ),
    refusals,
    warnings,
    true,
  );
  // Late, the path is not known to be the rule's own workspace: answered like any other (a slow answer must not
  // tell an existing workspace from a missing one).
  const answers = await Promise.all(
    rule.dependencies.map((dep) =>
      deadline.within(checkOneDependency(dep, cluster, deps), () => ({
        check: { ok: false, definite: false, message: unconfirmed(dep) },
        hidden: notCheckedInTime(`spec.dependencies[${dep.index}]`, ms).message,
      })),
    ),
  );
  for (const a of answers) sort(a.check, refusals, warnings, false);
  const hidden = answers.flatMap((a) => (a.hidden === undefined ? [] : [a.hidden]));
  if (refusals.length > 0) return answer(refuse(name, refusals), hidden);
  const warned = warnings.length > 0;
  return answer(warned ? allow("rule-unverified", warnings.slice(0, MAX_LISTED)) : allow("rule-valid"), hidden);
}

/**
 * admitRule with its log line (http/requests.ts counts the decision); never throws (an unexpected error allows with
 * a warning, like Ignore).
 */
export function createRuleAdmissionHandler(opts: {
  deps: RuleCheckDeps;
  logger: Logger;
}): (request: AdmissionRequest) => Promise<Decision> {
  return async (request) => {
    let decision: Decision;
    let hidden: string[] = [];
    try {
      ({ decision, hidden } = await checkRule(request, opts.deps));
    } catch (err) {
      opts.logger.error(logSafe({ uid: request.uid, err: String(err) }), "rule check failed");
      decision = allow("rule-unverified", ["the rule could not be checked; see its status"]);
    }
    if (decision.reason !== "rule-valid") {
      opts.logger.info(
        logSafe({
          uid: request.uid,
          name: request.name,
          operation: request.operation,
          reason: decision.reason,
          ...(decision.allowed ? { warnings: decision.warnings } : { message: decision.message }),
          // What the author was not told about other workspaces: for the operator only.
          ...(hidden.length > 0 ? { unconfirmed: hidden } : {}),
        }),
        decision.allowed ? "rule accepted with warnings" : "rule refused",
      );
    }
    return decision;
  };
}
