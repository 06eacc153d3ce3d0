// readLines: a watch stream's lines, whatever the chunking: split inside a line, several lines in one chunk, blank
// lines skipped, a last line without its newline left out (the server ended mid-event).
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { test } from "node:test";
import fc from "fast-check";
import { readLines } from "../../src/kcp/answers.ts";

async function linesOf(chunks: string[]): Promise<string[]> {
  const out: string[] = [];
  await readLines(Readable.from(chunks.map((c) => Buffer.from(c))), (l) => out.push(l));
  return out;
}

test("a line split over chunks, lines sharing a chunk, blank lines, an unfinished last line", async () => {
  assert.deepEqual(await linesOf(['{"a":', '1}\n{"b":2}\n\n  \n{"c"', ":3}\n", '{"d":']), [
    '{"a":1}',
    '{"b":2}',
    '{"c":3}',
  ]);
  assert.deepEqual(await linesOf(["x".repeat(1 << 20), "\n"]), ["x".repeat(1 << 20)]);
});

test("any chunking of the same text gives the same lines", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.stringMatching(/^[a-z{}":0-9 ]{0,20}$/), { maxLength: 8 }),
      fc.array(fc.nat(), { maxLength: 10 }),
      async (lines, cuts) => {
        const text = lines.map((l) => `${l}\n`).join("");
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at, text.length]
          .slice(1)
          .map((end, i, ends) => text.slice(i === 0 ? 0 : ends[i - 1], end));
        const want = lines.map((l) => l.trim()).filter((l) => l !== "");
        assert.deepEqual(await linesOf(chunks.filter((c) => c !== "")), want);
      },
    ),
  );
});
