// The single-file plugin's build (hack/plugin/): the bundle carries every module the plugin's entry reaches and
// nothing it cannot serve; the SEA injection gives a binary that runs its embedded script and is refused a second
// time; the krew manifest names the archive's sha256. The whole build, on real kcp, is in test/e2e/plugin.test.ts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parse } from "yaml";
import { collect, importsOf, mainScript } from "../../hack/plugin/bundle.ts";
import { ENTRY, EXCLUDED, PACKAGES } from "../../hack/plugin/build.ts";
import { krewManifest } from "../../hack/plugin/krew.ts";
import { injectSea } from "../../hack/plugin/sea-inject.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "plugin-build-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe("the plugin's bundle", () => {
  const bundle = collect(REPO_ROOT, ENTRY, PACKAGES, EXCLUDED);

  it("embeds the entry and every module it reaches, as JavaScript", () => {
    assert.ok(bundle.modules.has(ENTRY));
    assert.ok(bundle.modules.has("src/plugin/main.ts"));
    assert.ok(bundle.modules.has(PACKAGES.yaml.entry));
    for (const [file, js] of bundle.modules) {
      assert.ok(file.startsWith("src/") || file.startsWith(`${PACKAGES.yaml.root}/`), `${file} is ours or yaml's`);
      assert.doesNotMatch(js, /^import type /m, `${file}: types stripped`);
      for (const spec of importsOf(file, js).filter((s) => s.startsWith("."))) {
        const target = path.posix.join(path.posix.dirname(file), spec);
        assert.ok(bundle.modules.has(target), `${file} imports ${spec}, which is embedded`);
      }
    }
  });

  it("refuses what it could not serve: a computed import(), an unknown package", () => {
    assert.throws(
      () => importsOf("x.ts", "const m = await import(name);"),
      /x\.ts: import\(\) of a computed specifier/,
    );
    const dir = mkdtempSync(path.join(tmp, "graph-"));
    writeFileSync(path.join(dir, "entry.ts"), 'import { x } from "left-pad";\nexport const y: number = x;\n');
    assert.throws(
      () => collect(dir, "entry.ts", {}, {}),
      /entry\.ts: imports left-pad, which the bundle does not carry/,
    );
  });

  it("runs the modules through the hooks, and names what the single file lacks", () => {
    const dir = mkdtempSync(path.join(tmp, "run-"));
    writeFileSync(
      path.join(dir, "entry.ts"),
      'import { b } from "./lib/b.ts";\nconsole.log("a" + b);\nawait import("gone");\n',
    );
    mkdirSync(path.join(dir, "lib"));
    writeFileSync(path.join(dir, "lib/b.ts"), 'export const b: string = "b";\n');
    const script = path.join(dir, "main.cjs");
    writeFileSync(script, mainScript(collect(dir, "entry.ts", {}, { gone: "no gone here" }), { gone: "no gone here" }));
    const r = spawnSync(process.execPath, [script], { encoding: "utf8", cwd: os.tmpdir() });
    assert.equal(r.stdout, "ab\n");
    assert.match(r.stderr, /no gone here/);
    assert.equal(r.status, 1);
  });
});

describe("SEA injection without postject", () => {
  it("gives a binary that runs its embedded script, and will not inject twice", () => {
    const main = path.join(tmp, "hello.cjs");
    writeFileSync(main, 'console.log("hello", process.argv.slice(2).join(","), require("node:sea").isSea());\n');
    const config = path.join(tmp, "sea.json");
    const blob = path.join(tmp, "hello.blob");
    writeFileSync(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true }));
    assert.equal(spawnSync(process.execPath, ["--experimental-sea-config", config]).status, 0);
    const out = path.join(tmp, "hello");
    injectSea(process.execPath, readFileSync(blob), out);
    const r = spawnSync(out, ["a", "b"], { encoding: "utf8", env: {} });
    assert.equal(r.stdout, "hello a,b true\n", r.stderr);
    assert.throws(() => injectSea(out, readFileSync(blob), path.join(tmp, "twice")), /no unflipped SEA fuse/);
  });
});

describe("the krew manifest", () => {
  it("names the plugin's binary in the archive and the archive's sha256", () => {
    const sha256 = "ab".repeat(32);
    const m = parse(
      krewManifest("0.1.0", { os: "linux", arch: "amd64", uri: "https://r.example/k.tar.gz", sha256 }),
    ) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: { version: string; shortDescription: string; platforms: Record<string, unknown>[] };
    };
    assert.equal(m.apiVersion, "krew.googlecontainertools.github.com/v1alpha2");
    assert.equal(m.kind, "Plugin");
    assert.equal(m.metadata.name, "dependencies", "krew runs it as `kubectl dependencies`");
    assert.equal(m.spec.version, "v0.1.0");
    assert.ok(m.spec.shortDescription);
    assert.deepEqual(m.spec.platforms, [
      {
        selector: { matchLabels: { os: "linux", arch: "amd64" } },
        uri: "https://r.example/k.tar.gz",
        sha256,
        bin: "kubectl-dependencies",
        files: [{ from: "kubectl-dependencies", to: "." }],
      },
    ]);
  });
});
