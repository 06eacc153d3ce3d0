// The OCI image definition (Dockerfile, .dockerignore), checked with what stays true without a container engine (the
// real build and run is test/e2e/image.test.ts): the base is the pinned Node the tests run on, the final stage keeps
// only the runtime's root filesystem (no npm), the user is numeric and not root, the entry points are exec form, the
// build context holds what the Dockerfile copies, and the very commands the image runs (dist/cmd/*.js compiled by
// tsconfig.build.json) start.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { NODE_FLAGS, imageCommand } from "../../tools/kcp/binaries.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";

const dockerfile = readFileSync(path.join(REPO_ROOT, "Dockerfile"), "utf8");
const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};
/** Instructions with continuation lines joined; comments and blank lines dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, " ")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#"))
  .map((l) => ({ op: l.split(/\s+/)[0]!.toUpperCase(), args: l.slice(l.indexOf(" ") + 1).trim() }));
const finalStage = instructions.slice(instructions.map((i) => i.op).lastIndexOf("FROM"));

describe("OCI image (static checks)", () => {
  it("builds every stage on the slim image of the Node the tests run on (Node 24)", () => {
    const node = pkg.devDependencies["node"] ?? "";
    assert.match(node, /^24\.\d+\.\d+$/);
    assert.ok(dockerfile.includes(`ARG NODE_VERSION=${node}\n`), "ARG NODE_VERSION follows package.json");
    const froms = instructions.filter((i) => i.op === "FROM").map((i) => i.args.split(/\s+/));
    assert.ok(froms.length >= 2, "multi-stage: the compiler and dev packages stay out of the final image");
    for (const [base] of froms.slice(0, -1)) assert.equal(base, "node:${NODE_VERSION}-slim");
    // The final stage starts empty and takes the `runtime` stage's root filesystem (the base without npm) whole.
    assert.deepEqual(froms.at(-1), ["scratch"]);
    assert.equal(finalStage[1]?.op, "COPY");
    assert.equal(finalStage[1]?.args, "--from=runtime / /");
    const runtime = instructions.slice(instructions.findIndex((i) => /\sAS runtime$/.test(i.args)));
    const removed = runtime.find((i) => i.op === "RUN")?.args ?? "";
    for (const p of [
      "/usr/local/lib/node_modules",
      "/usr/local/bin/npm",
      "/usr/local/bin/npx",
      "/usr/local/bin/corepack",
    ])
      assert.ok(removed.includes(` ${p} `), `the runtime stage removes ${p}`);
  });

  it("runs as a numeric non-root user, with exec-form commands", () => {
    const user = finalStage.find((i) => i.op === "USER")?.args ?? "";
    const m = /^(\d+)(?::(\d+))?$/.exec(user);
    assert.ok(m, `USER ${user} is numeric (runAsNonRoot can verify it)`);
    assert.notEqual(Number(m[1]), 0);
    const entry = finalStage.find((i) => i.op === "ENTRYPOINT")?.args ?? "";
    assert.deepEqual(JSON.parse(entry), imageCommand("controller"));
  });

  it("copies from the build context only what exists and .dockerignore lets in", () => {
    const allowed = readFileSync(path.join(REPO_ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .filter((l) => l.startsWith("!"))
      .map((l) => l.slice(1).replace(/\/$/, ""));
    const copied = instructions
      .filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    for (const source of copied) {
      assert.ok(allowed.includes(source.replace(/\/$/, "")), `${source} is let into the context`);
      assert.ok(existsSync(path.join(REPO_ROOT, source)), `${source} exists`);
    }
  });

  describe("the commands the image runs", () => {
    let dist = "";
    before(() => {
      // tsconfig.build.json, as the image's build stage runs it, into a temporary directory.
      dist = mkdtempSync(path.join(os.tmpdir(), "image-dist-"));
      execFileSync(process.execPath, [
        path.join(REPO_ROOT, "node_modules/typescript/bin/tsc"),
        "-p",
        path.join(REPO_ROOT, "tsconfig.build.json"),
        "--outDir",
        path.join(dist, "dist"),
      ]);
      symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dist, "node_modules"));
      symlinkSync(path.join(REPO_ROOT, "package.json"), path.join(dist, "package.json"));
    });
    after(() => rmSync(dist, { recursive: true, force: true }));

    it("every command the Dockerfile's header names starts (--help), and the chart runs exactly those", () => {
      const named = [...dockerfile.matchAll(/^#\s+node \/app\/(dist\/cmd\/(\w+)\.js)\s/gm)];
      assert.deepEqual(
        named.map((m) => m[2]),
        ["controller", "webhook"],
      );
      const usage: Record<string, RegExp> = { controller: /^Usage: controller/, webhook: /^Usage: dependency-webhook/ };
      for (const [, file = "", name = ""] of named) {
        const out = execFileSync(
          process.execPath,
          ["--enable-source-maps", ...NODE_FLAGS, path.join(dist, file), "--help"],
          {
            encoding: "utf8",
            env: { PATH: process.env["PATH"] ?? "", NODE_ENV: "production" },
            timeout: 30_000,
          },
        );
        assert.match(out, usage[name] ?? /x^/);
        const template = readFileSync(path.join(REPO_ROOT, `deploy/chart/templates/${name}-deployment.yaml`), "utf8");
        assert.ok(template.includes(`command: [${imageCommand(name as "webhook" | "controller").join(", ")}]`));
      }
    });
  });
});
