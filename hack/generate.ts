// Writes the kcp manifests in deploy/kcp/ from src/api/manifests.ts; with --check, only says which are stale.
// Usage: node hack/generate.ts [--check]
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { deployFiles } from "../src/api/manifests.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function read(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

const check = process.argv.includes("--check");
const stale: string[] = [];
for (const [rel, content] of Object.entries(deployFiles())) {
  const file = path.join(root, rel);
  if (read(file) === content) continue;
  stale.push(rel);
  if (!check) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}
if (check && stale.length > 0) {
  process.stderr.write(
    `stale generated manifests: ${stale.join(", ")}; run \`node hack/generate.ts\` and commit them\n`,
  );
  process.exit(1);
}
process.stdout.write(check ? "generated manifests are up to date\n" : `wrote ${stale.length} file(s)\n`);
