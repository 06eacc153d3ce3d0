// Local targets' pure planning: which configuration each consumer workspace of a dependent export gets, the writes
// that install it only where the consumer accepted the claim (none in a steady state), and the coverage the rule's
// status reports.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRule } from "../../src/api/rule.ts";
import { logicalClusterName } from "../../src/api/wire.ts";
import {
  coverageOf,
  localConfiguration,
  localConfigurationName,
  localTargetSets,
  localTargetsVerdict,
  planLocalWrites,
  type ExportView,
} from "../../src/controller/local-targets.ts";
import {
  exportRecordData,
  exportsToVisit,
  LOCAL_EXPORTS_KEY,
  parseExportRecord,
  recordAfter,
  recordBefore,
} from "../../src/controller/local-targets-visits.ts";
import { baseOfEndpoint, exportEndpoint } from "../../src/controller/local-targets-shards.ts";
import { computeStatus, statusChanged, type RuleStatus } from "../../src/controller/status.ts";
import { ruleObject } from "./helpers-rules.ts";

const c = logicalClusterName;
const ENDPOINT = { group: "arc.test.io", resource: "endpoints", kind: "Endpoint" };
const rule = (cluster: string, name: string, resources: string[]) =>
  parseRule(
    ruleObject(
      cluster,
      name,
      ENDPOINT,
      resources.map((resource) => ({ resource, local: true, fieldPath: `.spec.${resource}Ref.name` })),
    ),
  )!;

const arc = rule("arc", "secrets", ["secrets"]);
const [set] = localTargetSets([arc, rule("arc", "maps", ["configmaps"]), rule("other", "none", [])]);
const want = localConfiguration(set!, "https://wh:9443", "Q0E=");

describe("local targets: what is installed", () => {
  it("groups the rules of one workspace by their dependent's export; rules without local targets add nothing", () => {
    assert.equal(localTargetSets([arc, rule("arc", "maps", ["configmaps"])]).length, 1);
    assert.deepEqual(set!.rules, ["arc/secrets", "arc/maps"]);
    assert.deepEqual(set!.export, { cluster: "arc", exportName: "arc.test.io" });
    assert.deepEqual(
      localTargetSets([arc], () => true),
      [],
      "a skipped rule (over its cap, dependent invalid)",
    );
  });

  it("asks kcp for DELETEs of the named core types only, at the rule workspace's route, fail closed", () => {
    assert.equal(want.metadata.name, localConfigurationName(set!.export));
    assert.match(want.metadata.name, /^dependency-controller-local-[0-9a-f]{16}$/);
    const hook = want.webhooks![0]!;
    assert.equal(hook.clientConfig.url, "https://wh:9443/validate/arc");
    assert.deepEqual(
      hook.rules!.map((r) => [r.operations, r.apiGroups, r.apiVersions, r.resources, r.scope]),
      [
        [["DELETE"], [""], ["v1"], ["configmaps"], "Namespaced"],
        [["DELETE"], [""], ["v1"], ["secrets"], "Namespaced"],
      ],
    );
    assert.equal(hook.failurePolicy, "Fail");
  });
});

describe("local targets: writes", () => {
  const view = (existing: ExportView["existing"] = []): ExportView => ({
    consumers: new Map([
      [c("acme"), true],
      [c("beta"), true],
      [c("declined"), false],
    ]),
    existing,
    claimed: true,
  });

  it("creates the configuration in each consumer that accepted the claim, never in one that declined", () => {
    const actions = planLocalWrites(want, view());
    assert.deepEqual(
      actions.map((a) => [a.kind, a.cluster]),
      [
        ["create", "acme"],
        ["create", "beta"],
      ],
    );
  });

  it("writes nothing when every consumer has it (steady state), and puts back a narrowed one", () => {
    const installed = [c("acme"), c("beta")].map((cluster) => ({ cluster, object: structuredClone(want) }));
    assert.deepEqual(planLocalWrites(want, view(installed)), []);
    const widened = structuredClone(want);
    widened.webhooks![0]!.failurePolicy = "Ignore";
    const actions = planLocalWrites(want, view([{ cluster: c("acme"), object: widened }, installed[1]!]));
    assert.deepEqual(
      actions.map((a) => [a.kind, a.cluster]),
      [["update", "acme"]],
    );
  });

  it("prunes the configurations once no rule of the export has local targets", () => {
    const installed = [{ cluster: c("acme"), object: structuredClone(want) }];
    assert.deepEqual(
      planLocalWrites(undefined, view(installed)).map((a) => [a.kind, a.cluster]),
      [["delete", "acme"]],
    );
  });
});

describe("local targets: status", () => {
  const consumers = new Map([
    [c("a"), true],
    [c("b"), true],
    [c("d"), true],
    [c("x"), false],
  ]);
  it("says how many consumer workspaces are protected and which declined", () => {
    const v = localTargetsVerdict(
      "arc.test.io",
      coverageOf(set!, { consumers, existing: [], claimed: true }, new Set()),
    );
    assert.deepEqual(v, {
      status: "True",
      reason: "SomeDeclined",
      message:
        "protecting configmaps and secrets in 3 of 4 consumer workspaces; 1 did not accept the " +
        "validatingwebhookconfigurations claim of arc.test.io and are unprotected (x)",
    });
  });
  it("is False when a write failed, the export claims nothing, or the provider granted nothing", () => {
    const failed = coverageOf(set!, { consumers, existing: [], claimed: true }, new Set([c("a")]));
    assert.equal(localTargetsVerdict("arc.test.io", failed).reason, "InstallFailed");
    assert.match(localTargetsVerdict("arc.test.io", failed).message, /in 2 of 4 consumer workspaces/);
    const unclaimed = coverageOf(set!, { consumers, existing: [], claimed: false }, new Set());
    assert.equal(localTargetsVerdict("arc.test.io", unclaimed).reason, "NotClaimed");
    const forbidden = localTargetsVerdict("arc.test.io", { kind: "unreadable", forbidden: true, message: "403" });
    assert.deepEqual([forbidden.status, forbidden.reason], ["False", "GrantMissing"]);
    assert.match(forbidden.message, /apply deploy\/rbac\/provider-local-targets\.yaml in this workspace$/);
  });
});

describe("local targets: where the export's virtual workspace is", () => {
  it("beside the dep-ctrl export's, on the same shard", () => {
    const e = { cluster: c("arc"), exportName: "arc.test.io" };
    const base = baseOfEndpoint("https://shard-1:6443/services/apiexport/depctrl/dependencies.opendefense.cloud");
    assert.equal(exportEndpoint(base!, e), "https://shard-1:6443/services/apiexport/arc/arc.test.io");
    assert.equal(baseOfEndpoint("https://shard-1:6443/somewhere"), undefined);
  });
});

describe("local targets: the rule's conditions", () => {
  it("a rule of local targets only is Ready where it protects, and not Ready without the provider's grant", () => {
    const consumers = new Map([[c("a"), true]]);
    const covered = coverageOf(set!, { consumers, existing: [], claimed: true }, new Set());
    const at = "2026-11-28T06:00:00Z";
    const cond = (local: Parameters<typeof localTargetsVerdict>[1]) =>
      computeStatus(arc, { resolutions: new Map(), installs: new Map(), ...(local ? { local } : {}) }, undefined, at)
        .conditions!.map((x) => `${x.type}=${x.status}/${x.reason}`)
        .sort();
    assert.deepEqual(
      cond(covered).filter((x) => /^(Ready|LocalTargets|WorkspacesResolved|WebhooksInstalled)/.test(x)),
      [
        "LocalTargetsProtected=True/Protected",
        "Ready=True/Ready",
        "WebhooksInstalled=True/OnlyLocalTargets",
        "WorkspacesResolved=True/OnlyLocalTargets",
      ],
    );
    assert.ok(cond({ kind: "unreadable", forbidden: true, message: "403" }).includes("Ready=False/GrantMissing"));
  });

  it("a rule that is not enforced (its dependent's export deleted, or over the cap) says so, not 'not looked at yet'", () => {
    const at = "2026-11-28T06:00:00Z";
    const problems = ['dependent: APIExport "arc.test.io" not found in root:arc'];
    const references = { dependentInvalid: true, invalidDependencies: new Set<number>(), problems, unknown: false };
    const condition = (facts: Partial<Parameters<typeof computeStatus>[1]>, previous?: RuleStatus) => {
      const status = computeStatus(arc, { resolutions: new Map(), installs: new Map(), ...facts }, previous, at);
      return { status, local: status.conditions!.find((x) => x.type === "LocalTargetsProtected")! };
    };
    const gone = condition({ references });
    assert.equal(`${gone.local.status}/${gone.local.reason}`, "False/DependentInvalid");
    assert.match(
      gone.local.message,
      /APIExport arc\.test\.io does not serve the dependent \(dependent: APIExport "arc/,
    );
    assert.match(gone.local.message, /protected in no consumer workspace/);
    assert.equal(statusChanged(gone.status, condition({ references }, gone.status).status), false, "no write again");
    const capped = condition({ overCap: 2 }).local;
    assert.equal(`${capped.status}/${capped.reason}`, "False/RuleCapExceeded");
    assert.match(capped.message, /more than 2 DependencyRules.*protected in no consumer workspace/);
  });
});

describe("local targets: the record of exports to visit (pruning is level-triggered)", () => {
  const gone = { cluster: c("gone"), exportName: "gone.test.io" };
  const arcExport = set!.export;

  it("visits the exports with rules now and the recorded ones without, each once, in a stable order", () => {
    const visits = exportsToVisit([set!], [gone, arcExport]);
    assert.deepEqual(
      visits.map((v) => [`${v.export.cluster}/${v.export.exportName}`, v.set !== undefined]),
      [
        ["arc/arc.test.io", true],
        ["gone/gone.test.io", false],
      ],
    );
    assert.deepEqual(exportsToVisit([], []), []);
  });

  it("grows the record before any write, and shrinks it only once an export without rules has nothing left", () => {
    assert.deepEqual(recordBefore([set!], []), [arcExport], "a new export is recorded before its first install");
    const visits = exportsToVisit([set!], [gone]);
    assert.deepEqual(recordAfter(visits, new Map([["gone/gone.test.io", "left"]])), [arcExport, gone]);
    assert.deepEqual(recordAfter(visits, new Map([["gone/gone.test.io", "pruned"]])), [arcExport]);
    assert.deepEqual(
      recordAfter(visits, new Map([["gone/gone.test.io", "gone"]])),
      [arcExport],
      "403/404: unreachable",
    );
    assert.deepEqual(recordAfter(exportsToVisit([set!], []), new Map()), [arcExport], "an export with rules stays");
  });

  it("keeps the record as sorted unique text (an unchanged set is no write) and drops what does not parse", () => {
    const data = exportRecordData([gone, arcExport, gone]);
    assert.equal(data[LOCAL_EXPORTS_KEY], '["arc/arc.test.io","gone/gone.test.io"]');
    assert.deepEqual(parseExportRecord({ data }), [arcExport, gone]);
    const bad = '["a/b/c","/x","NOT A CLUSTER/x","ok/",7,"fine/e.io"]';
    assert.deepEqual(parseExportRecord({ data: { [LOCAL_EXPORTS_KEY]: bad } }), [
      { cluster: "fine", exportName: "e.io" },
    ]);
    assert.deepEqual(parseExportRecord({ data: { [LOCAL_EXPORTS_KEY]: "{not json" } }), []);
    assert.deepEqual(parseExportRecord(undefined), []);
  });
});
