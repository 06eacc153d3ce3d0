// Size check: files over --max-file lines and functions over --max-fn lines (a function's span from its first to its
// last line, nested functions included), found with the TypeScript compiler API. Small files and functions keep each
// one about a single thing. Usage:
//   node hack/fnlen.ts [--max-file=250] [--max-fn=60] [--all] [dir-or-file ...]   (default: src tools bench hack)
// Prints one line per finding, longest first; exits 1 when something is over a limit (0 with --all, which lists all).
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

/** The product and the TypeScript that builds, measures and demonstrates it (tests are left out). */
const DEFAULT_ROOTS = ["src", "tools", "bench", "hack"];

interface Finding {
  file: string;
  line: number;
  name: string;
  lines: number;
}

function files(root: string): string[] {
  const stat = fs.statSync(root);
  if (stat.isFile()) return root.endsWith(".ts") ? [root] : [];
  return fs
    .readdirSync(root, { withFileTypes: true })
    .flatMap((e) => (e.name === "node_modules" ? [] : files(path.join(root, e.name))))
    .sort();
}

/** A readable name for a function node: its own name, or the variable, property or method it is assigned to. */
function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  if (ts.isCallExpression(parent)) return `<callback of ${parent.expression.getText(sf).slice(0, 40)}>`;
  return "<anonymous>";
}

function functionsIn(file: string): Finding[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: Finding[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ file, line: start + 1, name: nameOf(node, sf), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

function main(argv: readonly string[]): number {
  const flag = (name: string, fallback: number): number => {
    const v = argv.find((a) => a.startsWith(`--${name}=`));
    return v ? Number(v.slice(name.length + 3)) : fallback;
  };
  const maxFile = flag("max-file", 250);
  const maxFn = flag("max-fn", 60);
  const all = argv.includes("--all");
  const roots = argv.filter((a) => !a.startsWith("--"));
  const sources = (roots.length > 0 ? roots : DEFAULT_ROOTS).flatMap(files);
  let over = 0;
  const longFiles = sources
    .map((file) => ({ file, lines: fs.readFileSync(file, "utf8").split("\n").length - 1 }))
    .filter((f) => all || f.lines > maxFile)
    .sort((a, b) => b.lines - a.lines);
  for (const f of longFiles) {
    if (f.lines > maxFile) over++;
    console.log(`file ${String(f.lines).padStart(4)} lines  ${f.file}`);
  }
  const longFns = sources
    .flatMap(functionsIn)
    .filter((f) => all || f.lines > maxFn)
    .sort((a, b) => b.lines - a.lines);
  for (const f of longFns) {
    if (f.lines > maxFn) over++;
    console.log(`fn   ${String(f.lines).padStart(4)} lines  ${f.file}:${f.line} ${f.name}`);
  }
  console.log(
    `${over} over the limits (files > ${maxFile} lines, functions > ${maxFn} lines) in ${sources.length} files`,
  );
  return over > 0 && !all ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
