// teardown's command line through the command kit: scope (-n or --workspace), --plan and -o, --timeout,
// --concurrency, repeated --skip-protection; usage errors with the teardown hint, read by the one dispatch;
// the help page names exactly the flags the kit reads for teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { teardown } from "../../src/plugin/commands/teardown/command.ts";
import { helpPage } from "../../src/plugin/help.ts";
import { parseArgs, run } from "../../src/plugin/main.ts";
import { namedIds } from "../../src/plugin/commands/teardown/kcp-api.ts";

describe("teardown arguments", () => {
  it("-n with --plan -o json", () => {
    assert.deepEqual(parseArgs(["teardown", "-n", "default", "--plan", "-o", "json"]), {
      ok: true,
      command: {
        name: "teardown",
        namespace: "default",
        plan: true,
        format: "json",
        timeoutMs: 600_000,
        concurrency: 32,
        skipProtection: [],
        yes: false,
        ruleWorkspaces: [],
        connection: {},
      },
    });
  });

  it("--plan takes repeated --rule-workspace; without --plan it is a usage error", () => {
    const r = parseArgs(["teardown", "-n", "x", "--plan", "--rule-workspace", "root:a", "--rule-workspace=root:b"]);
    assert.ok(r?.ok && r.command.name === "teardown");
    assert.deepEqual(r.command.ruleWorkspaces, ["root:a", "root:b"]);
    const bad = parseArgs(["teardown", "-n", "x", "--rule-workspace", "root:a"]);
    assert.ok(bad && !bad.ok);
    assert.match(JSON.stringify(bad), /--rule-workspace is for --plan/);
  });

  it("--workspace alone is the whole workspace; flags before the command; repeated --skip-protection", () => {
    const r = parseArgs([
      "--kubeconfig=/k",
      "teardown",
      "--workspace",
      "root:c",
      "--timeout=2m",
      "--concurrency",
      "3",
      "--skip-protection",
      "vpc/a",
      "--skip-protection=subnet/b",
    ]);
    assert.ok(r?.ok && r.command.name === "teardown");
    assert.equal(r.command.namespace, undefined);
    assert.deepEqual(r.command.connection, { kubeconfig: "/k", workspace: "root:c" });
    assert.equal(r.command.timeoutMs, 120_000);
    assert.equal(r.command.concurrency, 3);
    assert.deepEqual(r.command.skipProtection, ["vpc/a", "subnet/b"]);
  });

  it("usage errors name the problem; other commands are not teardown's", () => {
    const cases: [string[], RegExp][] = [
      [["teardown"], /say what to take down/],
      [["teardown", "-n", "x", "--plan", "-o", "yaml"], /-o yaml: the output format is one of table, json/],
      [["teardown", "-n", "x", "--concurrency", "0"], /--concurrency 0/],
      [["teardown", "-n", "x", "--timeout", "soon"], /invalid duration/],
      [["teardown", "-n", "x", "--objects"], /teardown does not take --objects/],
      [["teardown", "-n", "x", "--bogus"], /unknown flag --bogus/],
    ];
    for (const [argv, want] of cases) {
      const r = parseArgs(argv);
      assert.ok(r && !r.ok, argv.join(" "));
      assert.match(r.error, want);
    }
    // -o is the plan's format with --plan, the final report's without.
    const report = parseArgs(["teardown", "-n", "x", "-o", "json"]);
    assert.ok(report.ok && report.command.name === "teardown" && report.command.format === "json");
    assert.equal(parseArgs(["why", "vpc/x"]).ok, true);
    const graph = parseArgs(["graph", "--plan"]);
    assert.ok(!graph.ok && graph.topic === "graph" && /graph does not take --plan/.test(graph.error));
    assert.deepEqual(parseArgs(["--help"]), { ok: true, command: { name: "help" } });
  });

  it("through run: help page, and a usage error with exit 2 and the teardown hint", async () => {
    let out = "";
    let err = "";
    const io = { out: (s: string) => (out += s), err: (s: string) => (err += s) };
    assert.equal(await run(["teardown", "--help"], io), 0);
    assert.match(out, /^kubectl dependencies teardown/);
    assert.equal(await run(["teardown"], io), 2);
    assert.match(err, /Run "kubectl dependencies teardown --help" for usage/);
    out = "";
    assert.equal(await run(["--help"], io), 0);
    assert.match(out, /teardown -n <ns> \| --workspace <path>/);
  });

  it("the help page names exactly the flags the kit reads for teardown", () => {
    const named = new Set([...helpPage("teardown").matchAll(/^\s+(?:-\w, )?--([a-z-]+)/gm)].map((m) => m[1]));
    for (const f of teardown.flags) assert.ok(named.has(f.name), `--${f.name} in the help page`);
    for (const c of ["kubeconfig", "context", "workspace"]) named.delete(c);
    assert.deepEqual([...named].sort(), teardown.flags.map((f) => f.name).sort());
  });

  it("--skip-protection names an object by kind, plural or group, with the namespace given or from -n", () => {
    const types = [
      { group: "network.test.io", version: "v1", name: "vpcs", singularName: "vpc", kind: "VPC", namespaced: true },
      { group: "zones.test.io", version: "v1", name: "zones", kind: "Zone", namespaced: false },
    ];
    const ids = namedIds(["vpc/a", "vpcs.network.test.io/team-b/b", "Zone/eu"], types, "team-a");
    assert.deepEqual(
      [...ids],
      ["network.test.io/vpcs/team-a/a", "network.test.io/vpcs/team-b/b", "zones.test.io/zones//eu"],
    );
    assert.throws(() => namedIds(["vpc"], types, "x"), /want <resource>\/<name>/);
    assert.throws(() => namedIds(["router/x"], types, "x"), /no such bound type/);
  });
});
