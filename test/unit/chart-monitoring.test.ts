// The chart's monitoring: the PrometheusRule (metrics.prometheusRule) rendered by helm and checked by
// `promtool check rules` (hack/promtool/build.sh finds or installs it), validated against the prometheus-operator
// schema, and held to docs/operations.md's alert table; the Grafana dashboard (metrics.grafanaDashboard) is valid
// JSON whose every query names metrics the binaries register. Both are off by default.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { Registry } from "prom-client";
import { parseAllDocuments, stringify } from "yaml";
import { createMetrics } from "../../src/controller/metrics.ts";
import { createWebhookMetrics } from "../../src/webhook/metrics.ts";
import { createOpenRequests } from "../../src/webhook/http/origins.ts";
import { pino } from "pino";
import { DependentsIndex } from "../../src/webhook/deletion/index/index.ts";
import { registerIndexMetrics } from "../../src/webhook/deletion/index/metrics.ts";
import { endpointRefusalCounter } from "../../src/webhook/deletion/index/export-endpoints.ts";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHART = path.join(REPO, "deploy/chart");
const tmp = mkdtempSync(path.join(os.tmpdir(), "chart-monitoring-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** The last line a build script prints: the binary's path. */
const buildScript = (script: string): string =>
  execFileSync("bash", [path.join(REPO, script)], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
    .trim()
    .split("\n")
    .at(-1) ?? "";

let helmBin = "";
let promtoolBin = "";
before(() => {
  helmBin = buildScript("hack/helm/build.sh");
  promtoolBin = buildScript("hack/promtool/build.sh");
});

interface KObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

function render(sets: string[]): KObject[] {
  // kcp's addresses: the chart renders nothing without them (the webhook's NetworkPolicy is on by default).
  const all = ["webhook.networkPolicy.kcpCIDRs={10.20.0.0/16}", ...sets];
  const r = spawnSync(helmBin, ["template", "rel", CHART, "--namespace", "mon", ...all.flatMap((s) => ["--set", s])], {
    encoding: "utf8",
    env: { ...process.env, HELM_CACHE_HOME: tmp },
  });
  assert.equal(r.status, 0, r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KObject | null)
    .filter((o): o is KObject => o !== null);
}

/** Every series name the binaries register (histograms as _bucket, _sum, _count; counters as named). */
async function registeredSeries(): Promise<Set<string>> {
  const registry = new Registry();
  createMetrics(registry);
  createWebhookMetrics(registry);
  createOpenRequests(registry);
  const unused = (): never => {
    throw new Error("no watch in this test");
  };
  registerIndexMetrics(registry, new DependentsIndex({ watch: unused, logger: pino({ level: "silent" }) }));
  endpointRefusalCounter(registry);
  const names = new Set<string>(["up"]);
  for (const m of await registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(m.name + s);
  }
  return names;
}

/** Metric names in a PromQL expression: identifiers followed by `{`, `[` or `)`, minus functions and keywords. */
function metricNames(expr: string): string[] {
  const names = [...expr.matchAll(/\b(dependency_[a-z_]+|up)\b(?=\s*[{[)])/g)].map((m) => m[1]!);
  return [...new Set(names)];
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

describe("chart monitoring: off by default", () => {
  it("renders neither a PrometheusRule nor a dashboard ConfigMap with the default values", () => {
    const kinds = render([]).map((o) => `${o.kind}/${o.metadata.name}`);
    assert.ok(!kinds.some((k) => k.startsWith("PrometheusRule/") || k.endsWith("-dashboard")), kinds.join(", "));
  });
});

describe("chart monitoring: the PrometheusRule", () => {
  const objects = (): KObject[] =>
    render(["metrics.prometheusRule.enabled=true", "metrics.prometheusRule.labels.release=prom"]);
  const ruleObject = (): KObject => {
    const found = objects().filter((o) => o.kind === "PrometheusRule");
    assert.equal(found.length, 1);
    return found[0]!;
  };

  it("passes `promtool check rules`", () => {
    const spec = ruleObject()["spec"] as { groups: unknown[] };
    const file = path.join(tmp, "rules.yaml");
    writeFileSync(file, stringify({ groups: spec.groups }));
    const r = spawnSync(promtoolBin, ["check", "rules", file], { encoding: "utf8" });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const alerts = (spec.groups as { rules?: unknown[] }[]).reduce((n, g) => n + (g.rules?.length ?? 0), 0);
    assert.ok(alerts >= 10, `only ${alerts} alerts`);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${alerts} rules found`));
  });

  it("promtool fails a broken expression (the check can fail)", () => {
    const file = path.join(tmp, "broken.yaml");
    writeFileSync(file, stringify({ groups: [{ name: "g", rules: [{ alert: "A", expr: "sum(rate(x[5m]) > 0" }] }] }));
    const r = spawnSync(promtoolBin, ["check", "rules", file], { encoding: "utf8" });
    assert.notEqual(r.status, 0);
  });

  it("validates against the prometheus-operator schema and carries the extra labels", () => {
    const o = ruleObject();
    new PrometheusRule(o as never).validate();
    assert.equal(o.metadata.labels?.["release"], "prom");
    assert.equal(o.metadata.namespace, "mon");
  });

  it("every alert: a severity, a summary, the release's namespace, only metrics the binaries register", async () => {
    const series = await registeredSeries();
    const groups = (ruleObject()["spec"] as { groups: { rules: Rule[] }[] }).groups;
    const rules = groups.flatMap((g) => g.rules);
    for (const r of rules) {
      assert.match(r.labels?.["severity"] ?? "", /^(critical|warning|info)$/, r.alert);
      assert.ok(r.annotations?.["summary"], `${r.alert} has a summary`);
      const names = metricNames(r.expr);
      assert.ok(names.length > 0, `${r.alert}: ${r.expr}`);
      for (const n of names) assert.ok(series.has(n), `${r.alert} uses ${n}, which no binary registers`);
      assert.match(r.expr, /namespace="mon"/, r.alert);
    }
  });

  it("covers every metric of docs/operations.md's alert table", () => {
    const ops = readFileSync(path.join(REPO, "docs/operations.md"), "utf8");
    const table = ops.slice(ops.indexOf("Alerts worth having"), ops.indexOf("## More than one shard"));
    const documented = new Set([...table.matchAll(/`([^`]+)`/g)].flatMap((m) => metricNames(m[1]!)));
    const rules = (ruleObject()["spec"] as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
    const used = new Set(rules.flatMap((r) => metricNames(r.expr)));
    assert.ok(documented.size >= 8, [...documented].join(", "));
    assert.deepEqual(
      [...documented].filter((m) => !used.has(m)),
      [],
    );
    // Each documented alert exists by its distinguishing selector.
    for (const sel of ['outcome="errored"', 'reason="skip-protection"', 'result="error"', "histogram_quantile(0.99"])
      assert.ok(
        rules.some((r) => r.expr.includes(sel)),
        sel,
      );
  });
});

describe("chart monitoring: the Grafana dashboard", () => {
  interface Panel {
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    targets?: { expr: string }[];
  }

  it("is valid JSON in a ConfigMap with the sidecar label, every query on registered metrics", async () => {
    const cm = render(["metrics.grafanaDashboard.enabled=true", "metrics.grafanaDashboard.namespace=grafana"]).find(
      (o) => o.kind === "ConfigMap" && o.metadata.name.endsWith("-dashboard"),
    );
    assert.ok(cm, "the dashboard ConfigMap is rendered");
    assert.equal(cm.metadata.namespace, "grafana");
    assert.equal(cm.metadata.labels?.["grafana_dashboard"], "1");
    const text = (cm["data"] as Record<string, string>)["kcp-dependency-controller.json"] ?? "";
    const dash = JSON.parse(text) as { uid: string; panels: Panel[]; templating: { list: { name: string }[] } };
    assert.equal(
      text.trim(),
      readFileSync(path.join(CHART, "dashboards/kcp-dependency-controller.json"), "utf8").trim(),
    );
    assert.ok(dash.uid);
    assert.deepEqual(
      dash.templating.list.map((v) => v.name),
      ["datasource", "namespace"],
    );

    const series = await registeredSeries();
    const panels = dash.panels.filter((p) => p.type !== "row");
    assert.ok(panels.length >= 10);
    assert.equal(new Set(dash.panels.map((p) => p.id)).size, dash.panels.length, "panel ids are unique");
    const used = new Set<string>();
    for (const p of panels) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits the 24-column grid`);
      assert.ok(p.targets && p.targets.length > 0, `${p.title} has a query`);
      for (const t of p.targets) {
        const names = metricNames(t.expr);
        assert.ok(names.length > 0, `${p.title}: ${t.expr}`);
        for (const n of names) {
          assert.ok(series.has(n), `${p.title} queries ${n}, which no binary registers`);
          used.add(n.replace(/_(bucket|sum|count)$/, ""));
        }
      }
    }
    // Every metric the binaries register is on the dashboard somewhere.
    const registered = [...series].filter((s) => s.startsWith("dependency_") && !/_(bucket|sum|count)$/.test(s));
    assert.deepEqual(
      registered.filter((m) => !used.has(m)),
      [],
    );
  });
});
