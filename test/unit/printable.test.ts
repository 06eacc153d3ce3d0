// printable(): what another tenant wrote, shown with every character a terminal would act on escaped; printableJson():
// the same JSON value with nothing raw in it that a terminal acts on.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { printable, printableJson } from "../../src/util/printable.ts";

/** Every character printable() must never let through. */
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe("printable", () => {
  it("escapes ANSI sequences, OSC 8 links, carriage returns, backspaces and newlines as Go's %q does", () => {
    assert.equal(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
    assert.equal(printable("\x1b]8;;http://evil\x07x\x1b]8;;\x07"), "\\x1b]8;;http://evil\\ax\\x1b]8;;\\a");
    assert.equal(printable("safe\rforged"), "safe\\rforged");
    assert.equal(printable("abc\b\b\bxyz"), "abc\\b\\b\\bxyz");
    assert.equal(printable("one\ntwo\tthree\vfour\ffive"), "one\\ntwo\\tthree\\vfour\\ffive");
    assert.equal(printable("\x00\x01\x7f"), "\\x00\\x01\\x7f");
  });

  it("escapes C1 controls, bidi overrides and isolates, and the Unicode line separators", () => {
    assert.equal(printable("\u0085\u009b2J"), "\\u0085\\u009b2J");
    assert.equal(printable("user\u202egnp.exe"), "user\\u202egnp.exe");
    assert.equal(
      printable("\u2066\u2067\u2068\u2069\u200e\u200f\u061c"),
      "\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c",
    );
    assert.equal(printable("a\u2028b\u2029c"), "a\\u2028b\\u2029c");
  });

  it("leaves ordinary text alone: backslashes, quotes, non-Latin scripts, emoji", () => {
    for (const s of ["VirtualMachine/vm-1", 'say "hi" \\x1b', "Ünïcødé 名前 שלום 🙂", ".spec.nics[*].subnetRef.name"])
      assert.equal(printable(s), s);
  });

  it("property: nothing raw comes out, applying it twice changes nothing, and clean text is kept", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        const p = printable(s);
        assert.ok(!RAW.test(p), JSON.stringify(p));
        assert.equal(printable(p), p);
        if (!RAW.test(s)) assert.equal(p, s);
      }),
    );
  });
});

describe("printableJson", () => {
  it("is the same JSON value, with C1, bidi and line separators escaped where JSON.stringify leaves them raw", () => {
    const value = { message: "a\x1b[2J\u0085\u202e\u2028\x7fb\nc", names: ["x\u2066"] };
    assert.ok(RAW.test(JSON.stringify(value)), "JSON.stringify alone leaves some raw");
    const text = printableJson(value);
    assert.ok(!RAW.test(text.replace(/\n/g, "")), text);
    assert.deepEqual(JSON.parse(text), value);
    assert.match(text, /\\u0085\\u202e\\u2028\\u007fb\\nc/);
  });

  it("property: any value round-trips, and only JSON's own line breaks are raw", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), (v, s) => {
        const value = { v, s };
        const text = printableJson(value);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
        assert.ok(!RAW.test(text.replace(/\n/g, "")));
      }),
    );
  });
});
