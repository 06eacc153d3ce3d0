// docs/getting-started.md, followed as a user would, against a fresh kcp: every ```sh block runs with bash, in order,
// in one shell session (each block sees the variables, functions and directory the previous ones left), from the
// repository root. So the guide cannot rot: a renamed flag, file or value fails here.
//
// A block is shaped by the HTML comment just above it (invisible on the rendered page):
//   <!-- docs-test: your-values -->     values the reader fills in; not run. Each `export NAME=value` takes the test's
//                                       value when the test has one (KUBECONFIG: this kcp's admin kubeconfig),
//                                       otherwise the documented example value.
//   <!-- docs-test: needs-cluster -->   needs a Kubernetes cluster or a container engine; not run.
//   <!-- docs-test: helm-template -->   a helm install: needs a cluster, so it runs with `helm` standing for a shim
//                                       that renders instead of installing (`helm template`, the same values, the
//                                       same --set-file files).
//   <!-- docs-test: expect-error -->    must fail, and its output must contain the ```text block that follows it.
// kcp starts with the demo's identities (tools/kcp/topology.ts TOKENS), the guide's defaults.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT, kcpSuite } from "../../tools/kcp/harness.ts";
import { freePort } from "../../tools/kcp/process.ts";
import { IDENTITIES, TOKENS } from "../../tools/kcp/topology.ts";

const GUIDE = path.join(REPO_ROOT, "docs/getting-started.md");
const env = kcpSuite({ tokens: TOKENS });

type Mode = "run" | "your-values" | "needs-cluster" | "helm-template" | "expect-error";

interface Block {
  mode: Mode;
  line: number;
  code: string;
  /** For expect-error: the ```text block after it. */
  expected?: string;
}

/** The guide's command blocks in order, each with its mode and, for expect-error, the output it documents. */
function parseGuide(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  let mode: Mode = "run";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const marker = /^<!--\s*docs-test:\s*([\w-]+)\s*-->$/.exec(line.trim());
    if (marker) {
      const m = marker[1] as Mode;
      assert.ok(["your-values", "needs-cluster", "helm-template", "expect-error"].includes(m), `unknown marker ${m}`);
      mode = m;
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(line);
    if (!fence) {
      if (line.trim() !== "" && mode !== "run")
        assert.fail(`line ${i}: a docs-test marker must sit just above a block`);
      continue;
    }
    const lang = fence[1] ?? "";
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ""); i++) body.push(lines[i] ?? "");
    const code = body.join("\n");
    if (lang === "sh" || lang === "bash") {
      blocks.push({ mode, line: start, code });
    } else if (lang === "text" && blocks.at(-1)?.mode === "expect-error" && blocks.at(-1)?.expected === undefined) {
      const last = blocks.at(-1);
      if (last) last.expected = code.trim();
    } else {
      assert.equal(mode, "run", `line ${start}: markers belong on sh blocks`);
    }
    mode = "run";
  }
  return blocks;
}

/** `export A=1 B=2` lines of a your-values block, as [name, value]. */
function exportsOf(code: string): [string, string][] {
  return code
    .split("\n")
    .filter((l) => l.startsWith("export "))
    .flatMap((l) =>
      [...l.slice("export ".length).matchAll(/(\w+)=(\S+)/g)].map((m): [string, string] => [m[1] ?? "", m[2] ?? ""]),
    );
}

/** A `helm` that renders what `helm install`/`upgrade --install` would install, with the same values and files. */
const HELM_SHIM = `#!/usr/bin/env bash
# docs test: no cluster here, so "helm [--kubeconfig F] upgrade --install NAME CHART ..." becomes "helm template".
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    install|upgrade) args+=(template) ;;
    --install|--create-namespace|--wait|--atomic) ;;
    --kubeconfig|--kube-context|--timeout) shift ;;
    --kubeconfig=*|--kube-context=*|--timeout=*) ;;
    *) args+=("$1") ;;
  esac
  shift
done
exec "$DOCS_TEST_HELM" "\${args[@]}" >"$DOCS_TEST_RENDERED"
`;

/** Variables bash keeps to itself; re-exporting them from the saved state would fail or mislead. */
const SHELL_OWN = /^declare -[a-z]*x[a-z]* (BASHOPTS|SHELLOPTS|BASH_VERSINFO|EUID|PPID|UID|SHLVL|PWD|OLDPWD|_)=/;

describe("docs/getting-started.md on a fresh kcp", () => {
  const markdown = readFileSync(GUIDE, "utf8");
  const blocks = parseGuide(markdown);
  const work = mkdtempSync(path.join(os.tmpdir(), "docs-guide-"));
  const guideDir = path.join(work, "guide");
  const state = path.join(work, "state.sh");
  const rendered = path.join(work, "helm-template.yaml");
  const shimDir = path.join(work, "shim");
  const given: Record<string, string> = {};
  let helmBin = "";
  let failed = false;

  before(async () => {
    // The guide's `bash hack/setup.sh` must find the packages installed: reinstalling them here would pull
    // node_modules from under the tests that run beside this one.
    const stamp = path.join(REPO_ROOT, "node_modules/.install-stamp");
    const want = createHash("sha256")
      .update(readFileSync(path.join(REPO_ROOT, "package.json")))
      .update(readFileSync(path.join(REPO_ROOT, "package-lock.json")))
      .digest("hex")
      .slice(0, 16);
    assert.equal(
      existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : "(none)",
      want,
      "node_modules is not what hack/setup.sh installed for this package-lock.json: run `bash hack/setup.sh` first",
    );
    // The tools "What you need" lists; a missing one is named here instead of failing a block halfway.
    await promisify(execFile)("bash", [
      "-c",
      "for t in kubectl envsubst openssl curl; do command -v $t || exit 1; done",
    ]).catch((err: { stdout?: string }) =>
      assert.fail(`the guide needs kubectl, envsubst, openssl and curl; found:\n${err.stdout}`),
    );
    mkdirSync(guideDir);
    mkdirSync(shimDir);
    writeFileSync(path.join(shimDir, "helm"), HELM_SHIM);
    chmodSync(path.join(shimDir, "helm"), 0o755);
    const helm = await promisify(execFile)("bash", [path.join(REPO_ROOT, "hack/helm/build.sh")], { encoding: "utf8" });
    helmBin = helm.stdout.trim().split("\n").at(-1) ?? "";
    // What the reader sets, and free ports instead of the guide's fixed defaults (other tests run beside this one).
    Object.assign(given, {
      KUBECONFIG: env.kcp.adminKubeconfig,
      GUIDE_DIR: guideDir,
      WEBHOOK_PORT: String(await freePort()),
      WEBHOOK_HEALTH_PORT: String(await freePort()),
      CONTROLLER_HEALTH_PORT: String(await freePort()),
    });
  });

  after(() => {
    // The guide's own clean-up stops the binaries; after a failure, stop what it started.
    if (existsSync(guideDir)) {
      for (const f of readdirSync(guideDir).filter((n) => n.endsWith(".pid"))) {
        const pid = Number(readFileSync(path.join(guideDir, f), "utf8"));
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    rmSync(work, { recursive: true, force: true });
  });

  function logs(): string {
    if (!existsSync(guideDir)) return "";
    return readdirSync(guideDir)
      .filter((f) => f.endsWith(".log"))
      .map((f) => `--- ${f} ---\n${readFileSync(path.join(guideDir, f), "utf8").split("\n").slice(-30).join("\n")}`)
      .join("\n");
  }

  /**
   * Runs one block in a new bash that starts from the state the previous block left. Asynchronously: kcp's log goes
   * through a pipe this process drains, and a kcp whose log pipe is full stops working.
   */
  function runBlock(code: string, shim = false): Promise<{ status: number | null; output: string }> {
    const script = [
      "set -eo pipefail",
      `[ -f '${state}' ] && source '${state}'`,
      `[ -f '${state}.cwd' ] && cd "$(cat '${state}.cwd')"`,
      // The shim stands for helm in this block only: its state is not kept.
      ...(shim
        ? [`export PATH='${shimDir}':"$PATH"`, code]
        : [
            code,
            `{ export -p | grep -Ev '${SHELL_OWN.source}'; declare -f; } >'${state}.next'`,
            `mv '${state}.next' '${state}'`,
            `pwd >'${state}.cwd'`,
          ]),
    ].join("\n");
    const child = spawn("bash", ["-c", script], {
      cwd: REPO_ROOT,
      timeout: 600_000,
      env: {
        ...process.env,
        ...given,
        KUBECACHEDIR: path.join(work, "kube-cache"),
        DOCS_TEST_HELM: helmBin,
        DOCS_TEST_RENDERED: rendered,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (output += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (output += s));
    return new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (status) => resolve({ status, output }));
    });
  }

  it("is shaped as the test expects: values to fill in, cluster-only blocks, and it ends with a refused delete", () => {
    assert.ok(blocks.filter((b) => b.mode === "run").length >= 10);
    assert.ok(blocks.some((b) => b.mode === "needs-cluster"));
    assert.ok(blocks.some((b) => b.mode === "helm-template" && /\bhelm\b.*\b(install|upgrade)\b/s.test(b.code)));
    const refusal = blocks.find((b) => b.mode === "expect-error");
    assert.match(refusal?.code ?? "", /kubectl .*delete vpc my-vpc$/m);
    assert.match(refusal?.expected ?? "", /denied the request: cannot delete vpcs\/my-vpc/);
    // Everything after the refusal is under "What next": the main path ends with the blocked delete.
    assert.ok(markdown.indexOf("## What next") > markdown.indexOf(refusal?.code ?? "\u0000"));
    // The guide's default identities are the ones the demo's kcp (and this test's) accepts.
    for (const id of [IDENTITIES.controller, IDENTITIES.webhook]) {
      assert.ok(markdown.includes(`:-${id.user}}`) && markdown.includes(`:-${id.token}}`), `defaults name ${id.user}`);
    }
  });

  for (const [index, block] of blocks.entries()) {
    const title = `block ${index + 1} (line ${block.line}, ${block.mode}): ${block.code.split("\n")[0]}`;
    it(title, async (t) => {
      if (failed) {
        t.skip("an earlier block failed");
        return;
      }
      if (block.mode === "needs-cluster") {
        t.skip("needs a Kubernetes cluster");
        return;
      }
      try {
        if (block.mode === "your-values") {
          const exports = exportsOf(block.code);
          assert.ok(exports.length > 0, "a your-values block exports what the reader fills in");
          // The test's values where it has them; the documented example values otherwise.
          const values = exports.map(([k, v]) => `export ${k}='${given[k] ?? v.replace(/^\$HOME/, os.homedir())}'`);
          const r = await runBlock(values.join("\n"));
          assert.equal(r.status, 0, r.output);
          return;
        }
        const r = await runBlock(block.code, block.mode === "helm-template");
        if (block.mode === "expect-error") {
          assert.notEqual(r.status, 0, `the block was expected to fail:\n${r.output}`);
          assert.ok(r.output.includes(block.expected ?? "\u0000"), `output as documented:\n${r.output}`);
          return;
        }
        assert.equal(r.status, 0, `exit ${r.status}:\n${r.output}\n${logs()}`);
        if (block.mode === "helm-template") {
          const kinds = parseAllDocuments(readFileSync(rendered, "utf8")).map(
            (d) => (d.toJS() as { kind?: string } | null)?.kind,
          );
          assert.ok(kinds.includes("Deployment") && kinds.includes("Secret"), `rendered: ${kinds.join(", ")}`);
        }
      } catch (err) {
        failed = true;
        throw err;
      }
    });
  }
});
