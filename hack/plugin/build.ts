// Builds the kubectl plugin as one file that runs without the repository or a Node install, with Node's single
// executable applications (SEA): the plugin's modules as one script (bundle.ts), Node's SEA preparation blob of it
// (`node --experimental-sea-config`), and that blob injected into a copy of this Node binary (sea-inject.ts). Then it
// runs the result once (`--help`), archives it for krew and writes the krew manifest with the archive's sha256.
//   node hack/plugin/build.ts [--out=dist] [--release-url=URL]   (or bash hack/plugin/build.sh)
// Writes <out>/kubectl-dependencies, <out>/kubectl-dependencies-<os>-<arch>.tar.gz and <out>/dependencies.yaml (the
// krew manifest, whose uri is <release-url>/<archive>). Linux only: the binary is this machine's Node, for its arch.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { collect, mainScript, type Excluded } from "./bundle.ts";
import { krewArch, krewManifest } from "./krew.ts";
import { injectSea } from "./sea-inject.ts";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ENTRY = "src/cmd/kubectl-dependencies.ts";
/** `yaml` as its ESM build (the Node build is CommonJS; both are the same parser). */
export const PACKAGES = { yaml: { entry: "node_modules/yaml/browser/index.js", root: "node_modules/yaml/browser" } };
export const EXCLUDED: Excluded = {
  "@kubernetes/client-node":
    "kubectl-dependencies (single file): this kubeconfig's user has exec or auth-provider credentials, which need " +
    "@kubernetes/client-node, and the single-file build does not carry it. Use a token or client-certificate " +
    "kubeconfig, or run the plugin from the repository (docs/plugin.md, Install).",
};
/** Where the krew manifest says the archive is, unless --release-url says where it was published. */
const UNPUBLISHED = "https://release-url-not-set.invalid";

function run(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", cwd });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The SEA main script and its blob, built by this Node. */
function seaBlob(work: string): Buffer {
  const bundle = collect(REPO, ENTRY, PACKAGES, EXCLUDED);
  const main = path.join(work, "main.cjs");
  writeFileSync(main, mainScript(bundle, EXCLUDED));
  // Paths relative to the build directory: the blob records the main script's path, and a build elsewhere must give
  // the same bytes (the krew manifest's sha256 is then the same for the same sources).
  writeFileSync(
    path.join(work, "sea-config.json"),
    JSON.stringify({ main: "main.cjs", output: "sea.blob", disableExperimentalSEAWarning: true }),
  );
  run(process.execPath, ["--experimental-sea-config", "sea-config.json"], work);
  process.stderr.write(`[plugin] ${bundle.modules.size} modules, ${readFileSync(main).length} bytes of script\n`);
  return readFileSync(path.join(work, "sea.blob"));
}

/** A gzipped tar holding the one file, owned by root, dated 1970: the same binary gives the same archive. */
function archive(dir: string, file: string, out: string): Buffer {
  const tar = `${out}.tar`;
  run("tar", ["--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", dir, "-cf", tar, file]);
  const gz = gzipSync(readFileSync(tar), { level: 9 });
  rmSync(tar);
  writeFileSync(out, gz);
  return gz;
}

/** Builds `<out>/kubectl-dependencies` and runs it once; returns its path. */
export function buildBinary(out: string): string {
  const work = path.join(out, "plugin-build");
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const binary = path.join(out, "kubectl-dependencies");
  rmSync(binary, { force: true });
  injectSea(process.execPath, seaBlob(work), binary);
  rmSync(work, { recursive: true, force: true });
  const help = run(binary, ["--help"]);
  if (!help.includes("why")) throw new Error(`the built plugin's --help does not list why:\n${help}`);
  return binary;
}

/** The single file, its krew archive and the krew manifest naming `<releaseUrl>/<archive>` with its sha256. */
export function build(out: string, releaseUrl: string): { binary: string; archive: string; manifest: string } {
  const binary = buildBinary(out);
  const arch = krewArch(process.arch);
  const name = `kubectl-dependencies-linux-${arch}.tar.gz`;
  const gz = archive(out, path.basename(binary), path.join(out, name));
  const sha256 = createHash("sha256").update(gz).digest("hex");
  const version = (JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
  const manifest = path.join(out, "dependencies.yaml");
  writeFileSync(manifest, krewManifest(version, { os: "linux", arch, uri: `${releaseUrl}/${name}`, sha256 }));
  return { binary, archive: path.join(out, name), manifest };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: "string" }, "release-url": { type: "string" } } });
  const out = path.resolve(values.out ?? path.join(REPO, "dist"));
  mkdirSync(out, { recursive: true });
  const built = build(out, (values["release-url"] ?? UNPUBLISHED).replace(/\/$/, ""));
  for (const file of Object.values(built)) process.stdout.write(`${file}\n`);
}
