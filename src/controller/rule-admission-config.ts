// The ValidatingWebhookConfiguration in the dep-ctrl workspace that sends every DependencyRule CREATE and UPDATE to
// the webhook's /validate-rules, so a rule that cannot be right is refused at `kubectl apply`. kcp applies a
// configuration in an APIExport's workspace to that export's objects in every binding workspace (verified on
// v0.30.0: called ~0.3 s after it is created; status updates are not sent).
//
// failurePolicy Ignore, on purpose: this check is early feedback, the controller's check is the authority (it runs
// on every rule, including ones written while the webhook was down, and reports on the rule's status). With Fail, a
// webhook outage would stop every provider from fixing or updating a rule.
import type { Logger } from "pino";
import type { ControllerMetrics } from "./metrics.ts";
import { GROUP, MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLURAL, VERSION } from "../api/types.ts";
import { VALIDATE_RULES_ROUTE, WEBHOOK_CONFIGURATIONS_PATH } from "../api/wire.ts";
import { isApiError } from "../kcp/rest.ts";
import { differences, isOurs } from "./actions.ts";
import type { ValidatingWebhookConfiguration } from "./desired.ts";

export const RULE_VWC_NAME = "dependency-controller-rules";
export const RULE_WEBHOOK_NAME = "rules.dependencies.opendefense.cloud";

export function ruleWebhookConfiguration(webhookBaseUrl: string, caBundle?: string): ValidatingWebhookConfiguration {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: RULE_VWC_NAME, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
    webhooks: [
      {
        name: RULE_WEBHOOK_NAME,
        clientConfig: {
          url: `${webhookBaseUrl.replace(/\/+$/, "")}${VALIDATE_RULES_ROUTE}`,
          ...(caBundle ? { caBundle } : {}),
        },
        rules: [
          {
            operations: ["CREATE", "UPDATE"],
            apiGroups: [GROUP],
            apiVersions: [VERSION],
            resources: [PLURAL],
            scope: "*",
          },
        ],
        failurePolicy: "Ignore",
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
        timeoutSeconds: 5,
        matchPolicy: "Equivalent",
      },
    ],
  };
}

export type RuleWebhookOutcome = "unchanged" | "created" | "updated" | "foreign" | { error: string };

/** What the sync needs: requests against the dep-ctrl workspace itself (the controller's own RBAC there). */
export interface WorkspaceRequests {
  request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T>;
}

/** Makes the dep-ctrl workspace hold `want`: one GET, and a write only when something differs. */
export async function syncRuleWebhook(
  client: WorkspaceRequests,
  want: ValidatingWebhookConfiguration,
): Promise<RuleWebhookOutcome> {
  try {
    let have: ValidatingWebhookConfiguration | undefined;
    try {
      have = await client.request<ValidatingWebhookConfiguration>(
        "GET",
        `${WEBHOOK_CONFIGURATIONS_PATH}/${RULE_VWC_NAME}`,
      );
    } catch (err) {
      if (!isApiError(err, 404)) throw err;
    }
    if (!have) {
      await client.request("POST", WEBHOOK_CONFIGURATIONS_PATH, { body: want });
      return "created";
    }
    if (!isOurs(have)) return "foreign";
    if (differences(have, want).length === 0) return "unchanged";
    const meta = have.metadata;
    await client.request("PUT", `${WEBHOOK_CONFIGURATIONS_PATH}/${RULE_VWC_NAME}`, {
      body: { ...want, metadata: { ...meta, labels: { ...meta.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } } },
    });
    return "updated";
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** The rule admission webhook's configuration; a failure is logged and counted, it never fails the pass. */
export async function syncRuleWebhookLogged(
  deps: { webhookBaseUrl: string; metrics: ControllerMetrics; logger: Logger },
  client: WorkspaceRequests,
  caBundle: string | undefined,
): Promise<void> {
  const outcome = await syncRuleWebhook(client, ruleWebhookConfiguration(deps.webhookBaseUrl, caBundle));
  if (outcome === "unchanged") return;
  if (outcome === "created" || outcome === "updated") {
    deps.metrics.writes.inc({ action: outcome === "created" ? "create" : "update" });
    deps.logger.info(`${outcome} the rule admission webhook configuration in the dep-ctrl workspace`);
    return;
  }
  deps.metrics.errors.inc({ reason: "rule_webhook" });
  deps.logger.warn(
    outcome === "foreign"
      ? { problem: "a configuration with its name but without our label exists" }
      : {
          err: outcome.error,
          hint: "grant the controller validatingwebhookconfigurations in deploy/rbac/dep-ctrl-workspace.yaml",
        },
    "rule admission webhook not configured; rules are still checked by the controller",
  );
}
