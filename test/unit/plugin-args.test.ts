// The plugin's command line: every subcommand, both target spellings, repeated and unknown flags, help, and the
// help pages against the flags the kit reads.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { helpPage } from "../../src/plugin/help.ts";
import { parseArgs, PROGRAM, run } from "../../src/plugin/main.ts";

describe("plugin arguments", () => {
  const cases: { name: string; argv: string[]; want: unknown }[] = [
    {
      name: "why with resource/name and -n",
      argv: ["why", "vpc/my-vpc", "-n", "team-a"],
      want: {
        name: "why",
        resource: "vpc",
        objectName: "my-vpc",
        namespace: "team-a",
        ruleWorkspaces: [],
        format: "text",
        connection: {},
      },
    },
    {
      name: "why with resource and name as two words, --namespace=, connection flags",
      argv: [
        "why",
        "vpcs.network.test.io",
        "my-vpc",
        "--namespace=x",
        "--kubeconfig=/k",
        "--context",
        "c",
        "--workspace",
        "root:a",
      ],
      want: {
        name: "why",
        resource: "vpcs.network.test.io",
        objectName: "my-vpc",
        namespace: "x",
        ruleWorkspaces: [],
        format: "text",
        connection: { kubeconfig: "/k", context: "c", workspace: "root:a" },
      },
    },
    {
      name: "why naming the rule workspaces, -o json",
      argv: ["why", "vpc/v", "--rule-workspace", "root:compute", "-o", "json"],
      want: {
        name: "why",
        resource: "vpc",
        objectName: "v",
        ruleWorkspaces: ["root:compute"],
        format: "json",
        connection: {},
      },
    },
    {
      name: "graph defaults to mermaid, types",
      argv: ["graph"],
      want: { name: "graph", format: "mermaid", objects: false, ruleWorkspaces: [], connection: {} },
    },
    {
      name: "graph -o dot --objects with repeated --rule-workspace",
      argv: ["graph", "-o", "dot", "--objects", "--rule-workspace", "root:a", "--rule-workspace=root:b"],
      want: { name: "graph", format: "dot", objects: true, ruleWorkspaces: ["root:a", "root:b"], connection: {} },
    },
    { name: "check", argv: ["check"], want: { name: "check", ruleWorkspaces: [], connection: {} } },
    { name: "help for a command", argv: ["graph", "--help"], want: { name: "help", topic: "graph" } },
    { name: "help word", argv: ["help", "why"], want: { name: "help", topic: "why" } },
    { name: "bare --help", argv: ["--help"], want: { name: "help" } },
  ];
  for (const c of cases)
    it(c.name, () => {
      assert.deepEqual(parseArgs(c.argv), { ok: true, command: c.want });
    });

  const errors: { name: string; argv: string[]; match: RegExp }[] = [
    { name: "no command", argv: [], match: /missing command/ },
    { name: "unknown command", argv: ["delete"], match: /unknown command "delete"/ },
    { name: "why without object", argv: ["why"], match: /why needs one object/ },
    { name: "why with a bare resource", argv: ["why", "vpc"], match: /why needs one object/ },
    { name: "why with too many slashes", argv: ["why", "a/b/c"], match: /why needs one object/ },
    { name: "unknown output", argv: ["graph", "-o", "svg"], match: /one of mermaid, dot, json/ },
    { name: "why's unknown output", argv: ["why", "vpc/v", "-o", "yaml"], match: /one of text, json/ },
    { name: "flag without value", argv: ["why", "vpc/x", "-n"], match: /-n needs a value/ },
    { name: "unknown flag", argv: ["check", "--all"], match: /unknown flag --all/ },
    { name: "flag of another command", argv: ["check", "-o", "json"], match: /check does not take --output/ },
    { name: "-n on graph", argv: ["graph", "-n", "x"], match: /graph does not take --namespace/ },
    { name: "--objects with a value", argv: ["graph", "--objects=yes"], match: /takes no value/ },
    { name: "graph with an argument", argv: ["graph", "vpcs"], match: /graph takes no arguments/ },
  ];
  for (const c of errors)
    it(`refuses: ${c.name}`, () => {
      const r = parseArgs(c.argv);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, c.match);
    });
});

describe("plugin entry", () => {
  const capture = (): { io: { out(t: string): void; err(t: string): void }; out: string[]; err: string[] } => {
    const out: string[] = [];
    const err: string[] = [];
    return { io: { out: (t) => out.push(t), err: (t) => err.push(t) }, out, err };
  };

  it("help goes to stdout with exit 0; a bad argument is one line and exit 2", async () => {
    const h = capture();
    assert.equal(await run(["why", "--help"], h.io), 0);
    assert.match(h.out.join(""), /Exit code: 0 the object can be deleted now; 1 a delete would be refused/);
    const bad = capture();
    assert.equal(await run(["graph", "-o", "svg"], bad.io), 2);
    assert.equal(
      bad.err.join(""),
      'error: -o svg: the output format is one of mermaid, dot, json\nRun "kubectl dependencies graph --help" for usage.\n',
    );
  });

  it("an unreadable kubeconfig is an error line, not a stack trace", async () => {
    const c = capture();
    assert.equal(await run(["check", "--kubeconfig=/nonexistent/kubeconfig"], c.io), 2);
    assert.match(c.err.join(""), /^error: cannot load kubeconfig \/nonexistent\/kubeconfig: ENOENT/);
    assert.doesNotMatch(c.err.join(""), /^\s+at /m);
  });
});

describe("plugin help pages and the flags the kit reads", () => {
  it("each command's page names every flag it takes, and no other", () => {
    for (const cmd of PROGRAM.commands) {
      const page = helpPage(cmd.name);
      const takes = new Set([...PROGRAM.common, ...cmd.flags].map((f) => f.name));
      for (const name of takes) assert.match(page, new RegExp(`--${name}\\b`), `${cmd.name} --${name}`);
      for (const [, name] of page.matchAll(/--([a-z-]+)/g)) assert.ok(takes.has(name!), `${cmd.name} names --${name}`);
    }
  });
});

describe("plugin arguments kubectl users also type", () => {
  it("-n=ns, -nns, and flags with values before the command", () => {
    for (const argv of [
      ["why", "vpc/v", "-n=team-a"],
      ["why", "vpc/v", "-nteam-a"],
      ["-n", "team-a", "why", "vpc/v"],
    ]) {
      const r = parseArgs(argv);
      assert.ok(r.ok && r.command.name === "why" && r.command.namespace === "team-a", argv.join(" "));
    }
    const check = parseArgs(["--workspace", "root:x", "check"]);
    assert.deepEqual(check, {
      ok: true,
      command: { name: "check", ruleWorkspaces: [], connection: { workspace: "root:x" } },
    });
  });
});
