// The command kit's command line: flags with aliases, switches and repeats, subcommands and their arguments, and the
// flat form the binaries read (with environment fallbacks and their wording of usage errors).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readCommandLine, readFlags, scanArgs, UsageError, type Flag, type Program } from "../../src/cli/kit.ts";

const FLAGS: Flag[] = [
  { name: "namespace", short: "n", help: "ns" },
  { name: "objects", boolean: true, help: "switch" },
  { name: "rule-workspace", help: "repeatable" },
];

const problemOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof UsageError, String(err));
    return { problem: err.problem, command: err.command };
  }
  assert.fail("no UsageError");
};

describe("scanArgs", () => {
  it("reads long, short, attached and inline values, switches, repeats and arguments after --", () => {
    const g = scanArgs(
      FLAGS,
      [
        "a",
        "-n",
        "x",
        "--namespace=y",
        "-nz",
        "-n=w",
        "--objects",
        "--rule-workspace",
        "r1",
        "--rule-workspace=r2",
        "--",
        "-b",
      ],
      { positionals: true },
    );
    assert.deepEqual(g.values.get("namespace"), ["x", "y", "z", "w"]);
    assert.deepEqual(g.values.get("rule-workspace"), ["r1", "r2"]);
    assert.deepEqual([...g.switches], ["objects"]);
    assert.deepEqual(g.positionals, ["a", "-b"]);
  });

  it("names each problem with the flag as typed, the first in argv order", () => {
    const scan =
      (argv: string[], refuseEmpty = false) =>
      () =>
        scanArgs(FLAGS, argv, { positionals: false, refuseEmpty });
    assert.deepEqual(problemOf(scan(["--bogus", "-n"])), {
      problem: { kind: "unknown-flag", flag: "--bogus" },
      command: undefined,
    });
    assert.deepEqual(problemOf(scan(["-n"])), { problem: { kind: "missing-value", flag: "-n" }, command: undefined });
    assert.deepEqual(problemOf(scan(["--namespace="], true)), {
      problem: { kind: "missing-value", flag: "--namespace" },
      command: undefined,
    });
    assert.deepEqual(problemOf(scan(["--objects=yes"])), {
      problem: { kind: "unexpected-value", flag: "--objects" },
      command: undefined,
    });
    assert.deepEqual(problemOf(scan(["x"])), {
      problem: { kind: "unexpected-argument", arg: "x" },
      command: undefined,
    });
  });
});

describe("readCommandLine", () => {
  const program: Program = {
    common: [{ name: "kubeconfig", help: "k" }],
    commands: [
      { name: "get", args: true, flags: [FLAGS[0]!] },
      { name: "list", flags: [FLAGS[1]!] },
    ],
  };
  const read = (...argv: string[]) => readCommandLine(program, argv);

  it("finds the command, its arguments and flags anywhere on the line", () => {
    const line = read("-n", "a", "get", "thing", "--kubeconfig=/k");
    assert.ok(!line.help);
    assert.equal(line.command, "get");
    assert.deepEqual(line.given.positionals, ["thing"]);
    assert.deepEqual(line.given.values.get("namespace"), ["a"]);
  });

  it("help as a word, a flag or with a command", () => {
    assert.deepEqual(read("--help"), { help: true });
    assert.deepEqual(read("help"), { help: true });
    assert.deepEqual(read("help", "list"), { help: true, command: "list" });
    assert.deepEqual(read("list", "-h", "--objects"), { help: true, command: "list" });
  });

  it("refuses what the command does not take, naming the command", () => {
    assert.deepEqual(
      problemOf(() => read()),
      { problem: { kind: "missing-command" }, command: undefined },
    );
    assert.throws(() => read("put"), { message: 'unknown command "put": use get or list' });
    assert.deepEqual(
      problemOf(() => read("list", "-n", "x")),
      {
        problem: { kind: "flag-not-taken", flag: "namespace" },
        command: "list",
      },
    );
    assert.deepEqual(
      problemOf(() => read("list", "x")),
      {
        problem: { kind: "arguments-not-taken", args: ["x"] },
        command: "list",
      },
    );
    assert.deepEqual(
      problemOf(() => read("get", "--nope")),
      {
        problem: { kind: "unknown-flag", flag: "--nope" },
        command: "get",
      },
    );
  });
});

describe("readFlags (the binaries)", () => {
  const flags: Flag[] = [
    { name: "kubeconfig", env: "KUBECONFIG", help: "k" },
    { name: "port", default: "1", help: "p" },
  ];

  it("a flag wins over its variable, an empty value counts as not given, the last of a repeat counts", () => {
    assert.deepEqual(readFlags(flags, ["--kubeconfig=/a", "--kubeconfig", "/b"], { KUBECONFIG: "/env" }), {
      kubeconfig: "/b",
      port: "1",
    });
    assert.deepEqual(readFlags(flags, ["--kubeconfig="], { KUBECONFIG: "/env" }), { kubeconfig: "/env", port: "1" });
    assert.equal(readFlags(flags, ["-h"], {}), "help");
  });

  it("keeps the wording the binaries always had", () => {
    assert.throws(() => readFlags(flags, ["--bogus"], {}), { message: "Unknown option '--bogus' (see --help)" });
    assert.throws(() => readFlags(flags, ["--port"], {}), {
      message: "Option '--port <value>' argument missing (see --help)",
    });
    assert.throws(() => readFlags(flags, ["x"], {}), { message: /^Unexpected argument 'x'/ });
  });
});
