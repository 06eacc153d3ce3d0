// The OCI image definition (Dockerfile, .dockerignore). No container engine runs here, so the test plays the
// Dockerfile itself: each stage is a directory, COPY copies from the build context (refusing what is missing or what
// .dockerignore leaves out) or from an earlier stage, RUN executes the npm and node steps it knows (npm ci becomes a
// link to this checkout's packages; with --omit=dev, to the runtime packages only), and in the final stage every
// command the image names (ENTRYPOINT and the commands listed in its header) must start and print its --help.
// Also checked: a slim Node 24 base pinned to the Node the tests run on, a numeric non-root USER, no shell form.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dockerfile = readFileSync(path.join(REPO, "Dockerfile"), "utf8");
const dockerignore = readFileSync(path.join(REPO, ".dockerignore"), "utf8");
const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** Instructions with continuation lines joined; comments and blank lines dropped. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i] ?? "";
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith("\\") && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i] ?? ""}`;
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    assert.ok(m, `Dockerfile line ${start + 1} is an instruction: ${line}`);
    out.push({ op: (m[1] ?? "").toUpperCase(), args: (m[2] ?? "").trim(), line: start + 1 });
  }
  return out;
}

/** .dockerignore semantics for the patterns used: the last matching pattern wins, a match on a parent counts. */
function ignored(rel: string): boolean {
  const patterns = dockerignore
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const candidates = rel.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"));
  let excluded = false;
  for (const raw of patterns) {
    const negate = raw.startsWith("!");
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, "");
    if (candidates.some((c) => path.matchesGlob(c, pattern))) excluded = !negate;
  }
  return excluded;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => statSync(path.join(dir, f)).isFile());
}

interface Stage {
  name: string;
  base: string;
  root: string;
  workdir: string;
  entrypoint?: string[];
  user?: string;
}

/** Production packages of the lockfile, at the top level of node_modules. */
function runtimePackages(): string[] {
  const lock = JSON.parse(readFileSync(path.join(REPO, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([key, v]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(key) && !v.dev)
    .map(([key]) => key.slice("node_modules/".length));
}

describe("image: the Dockerfile, played without a container engine", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "image-test-"));
  const stages: Stage[] = [];
  const args = new Map<string, string>();
  const copied: string[] = [];
  const helpOutputs = new Map<string, string>();
  let final: Stage | undefined;
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const inStage = (stage: Stage, p: string): string =>
    path.join(stage.root, path.posix.isAbsolute(p) ? p : path.posix.join(stage.workdir, p));
  const expand = (s: string): string =>
    s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a: string | undefined, b: string | undefined) => {
      const name = a ?? b ?? "";
      assert.ok(args.has(name), `ARG ${name} is declared before use`);
      return args.get(name) ?? "";
    });

  function run(stage: Stage, command: string, line: number): void {
    for (const part of command.split("&&").map((c) => c.trim())) {
      const words = part.split(/\s+/);
      const cwd = inStage(stage, ".");
      if (words[0] === "npm" && words[1] === "ci") {
        for (const f of ["package.json", "package-lock.json"])
          assert.ok(existsSync(path.join(cwd, f)), `line ${line}: npm ci needs ${f} copied first`);
        assert.ok(words.includes("--ignore-scripts"), `line ${line}: npm ci runs without install scripts`);
        if (words.includes("--omit=dev")) {
          mkdirSync(path.join(cwd, "node_modules"), { recursive: true });
          for (const name of runtimePackages()) {
            mkdirSync(path.dirname(path.join(cwd, "node_modules", name)), { recursive: true });
            symlinkSync(path.join(REPO, "node_modules", name), path.join(cwd, "node_modules", name));
          }
        } else {
          symlinkSync(path.join(REPO, "node_modules"), path.join(cwd, "node_modules"));
        }
      } else if (words[0] === "npm" && words[1] === "cache") {
        // nothing to clean here
      } else if (words[0] === "node") {
        execFileSync(process.execPath, words.slice(1), { cwd, stdio: ["ignore", "pipe", "pipe"] });
      } else {
        assert.fail(`line ${line}: the image test cannot play RUN ${part}; teach it`);
      }
    }
  }

  before(() => {
    let stage: Stage | undefined;
    for (const { op, args: rest, line } of instructions(dockerfile)) {
      if (op === "ARG") {
        const [name = "", value = ""] = rest.split("=");
        args.set(name, value);
      } else if (op === "FROM") {
        const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
        assert.ok(m, `line ${line}: FROM <image> [AS <name>]`);
        const base = expand(m[1] ?? "");
        const name = m[2] ?? `stage-${stages.length}`;
        const root = path.join(tmp, name);
        mkdirSync(root, { recursive: true });
        stage = { name, base, root, workdir: "/" };
        stages.push(stage);
      } else {
        assert.ok(stage, `line ${line}: ${op} after a FROM`);
        if (op === "WORKDIR") {
          stage.workdir = path.posix.resolve(stage.workdir, rest);
          mkdirSync(inStage(stage, "."), { recursive: true });
        } else if (op === "COPY") {
          const words = rest.split(/\s+/);
          const from = words.find((w) => w.startsWith("--from="))?.slice("--from=".length);
          const paths = words.filter((w) => !w.startsWith("--"));
          const dest = paths.pop() ?? "";
          assert.ok(paths.length > 0, `line ${line}: COPY <src>... <dest>`);
          for (const src of paths) {
            let source: string;
            if (from) {
              const other = stages.find((s) => s.name === from);
              assert.ok(other, `line ${line}: stage ${from} exists before it is copied from`);
              source = inStage(other, src);
              assert.ok(existsSync(source), `line ${line}: ${src} exists in stage ${from}`);
            } else {
              source = path.join(REPO, src);
              assert.ok(existsSync(source), `line ${line}: ${src} exists in the build context`);
              const files = statSync(source).isDirectory() ? filesUnder(source).map((f) => path.join(src, f)) : [src];
              assert.ok(files.length > 0, `line ${line}: ${src} is not empty`);
              for (const f of files) assert.ok(!ignored(f), `line ${line}: ${f} is not excluded by .dockerignore`);
              copied.push(src);
            }
            const intoDir = dest.endsWith("/") || paths.length > 1;
            const target = intoDir ? path.join(inStage(stage, dest), path.basename(src)) : inStage(stage, dest);
            mkdirSync(path.dirname(target), { recursive: true });
            cpSync(source, target, { recursive: true, verbatimSymlinks: true });
          }
        } else if (op === "RUN") {
          run(stage, rest, line);
        } else if (op === "ENTRYPOINT" || op === "CMD") {
          assert.ok(rest.startsWith("["), `line ${line}: ${op} in exec form (signals reach node, no shell)`);
          if (op === "ENTRYPOINT") stage.entrypoint = JSON.parse(rest) as string[];
        } else if (op === "USER") {
          stage.user = rest;
        } else if (!["ENV", "EXPOSE", "LABEL"].includes(op)) {
          assert.fail(`line ${line}: the image test does not know ${op}; teach it`);
        }
      }
    }
    final = stages.at(-1);
  });

  const finalStage = (): Stage => {
    assert.ok(final, "the Dockerfile has a final stage");
    return final;
  };

  /** Runs an image command (absolute paths mapped into the final stage) with --help; returns its stdout. */
  function help(command: string[]): string {
    const stage = finalStage();
    assert.equal(command[0], "node", "commands run on the image's node");
    const mapped = command.slice(1).map((a) => (a.startsWith("/") ? path.join(stage.root, a) : a));
    const key = mapped.join(" ");
    const cached = helpOutputs.get(key);
    if (cached !== undefined) return cached;
    const out = execFileSync(process.execPath, [...mapped, "--help"], {
      cwd: inStage(stage, "."),
      encoding: "utf8",
      env: { PATH: process.env["PATH"] ?? "", NODE_ENV: "production" },
      timeout: 30_000,
    });
    helpOutputs.set(key, out);
    return out;
  }

  it("copies only files that exist and that .dockerignore lets into the context", () => {
    for (const local of ["node_modules/typescript/package.json", "dist/cmd/controller.js", "test/unit/image.test.ts"])
      assert.ok(ignored(local), `${local} stays out of the build context`);
    assert.deepEqual([...new Set(copied)].sort(), [
      "package-lock.json",
      "package.json",
      "src",
      "tsconfig.build.json",
      "tsconfig.json",
    ]);
  });

  it("builds on the slim image of the Node the tests run on (Node 24)", () => {
    const node = pkg.devDependencies["node"] ?? "";
    assert.match(node, /^24\.\d+\.\d+$/);
    assert.equal(args.get("NODE_VERSION"), node, "ARG NODE_VERSION follows package.json's node devDependency");
    for (const s of stages) assert.equal(s.base, `node:${node}-slim`, `stage ${s.name} is node:${node}-slim`);
    assert.ok(stages.length >= 2, "multi-stage: the compiler and dev packages stay out of the final image");
  });

  it("runs as a numeric non-root user", () => {
    const user = finalStage().user ?? "";
    const m = /^(\d+)(?::(\d+))?$/.exec(user);
    assert.ok(m, `USER ${user} is numeric (runAsNonRoot can verify it)`);
    assert.notEqual(Number(m[1]), 0);
  });

  it("holds the compiled entry points, ES modules, and runtime packages only", () => {
    const app = inStage(finalStage(), ".");
    for (const f of ["dist/cmd/controller.js", "dist/cmd/webhook.js", "package.json"])
      assert.ok(existsSync(path.join(app, f)), `${f} is in the image`);
    assert.equal(
      (JSON.parse(readFileSync(path.join(app, "package.json"), "utf8")) as { type?: string }).type,
      "module",
    );
    const runtime = new Set(runtimePackages());
    // A devDependency can also be a runtime package's dependency (@types/node is one of @kubernetes/client-node's).
    for (const dev of Object.keys(pkg.devDependencies).filter((d) => !runtime.has(d)))
      assert.ok(!existsSync(path.join(app, "node_modules", dev)), `devDependency ${dev} is not in the final image`);
    assert.ok(existsSync(path.join(app, "node_modules/@kubernetes/client-node")), "runtime packages are");
    assert.ok(!existsSync(path.join(app, "src")), "no TypeScript sources in the final image");
  });

  it("ENTRYPOINT starts the controller (--help)", () => {
    const entry = finalStage().entrypoint;
    assert.ok(entry, "the final stage has an ENTRYPOINT");
    assert.match(help(entry), /^Usage: controller/);
  });

  it("every command the header names starts (--help), and the chart runs exactly those", () => {
    const named = [...dockerfile.matchAll(/^#\s+node (\/app\/dist\/cmd\/(\w+)\.js)\s/gm)];
    assert.deepEqual(
      named.map((m) => m[2]),
      ["controller", "webhook"],
    );
    const usage: Record<string, RegExp> = { controller: /^Usage: controller/, webhook: /^Usage: dependency-webhook/ };
    for (const m of named) assert.match(help(["node", "--enable-source-maps", m[1] ?? ""]), usage[m[2] ?? ""] ?? /x^/);
    for (const component of ["controller", "webhook"]) {
      const template = readFileSync(path.join(REPO, `deploy/chart/templates/${component}-deployment.yaml`), "utf8");
      assert.ok(
        template.includes(`command: [node, --enable-source-maps, /app/dist/cmd/${component}.js]`),
        `the chart's ${component} runs /app/dist/cmd/${component}.js`,
      );
    }
  });
});
