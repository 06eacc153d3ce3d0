// Text another tenant wrote, made safe to print. The plugin shows what others wrote (another webhook's refusal, a
// rule's status message, a blocker's name) to someone who did not write it, on a terminal: a control character in it
// could clear the screen, retitle the window or hide a link (ESC sequences), overwrite what came before it (`\r`,
// backspace), and a bidi override could make it read differently from what it says. So each such character is shown
// as an escape instead, the way Go's %q writes it (`\x1b`, `\r`, `\u202e`), newlines included: a newline in a
// tenant's text must not pass for a line of the plugin's own. Backslashes are left as they are, so ordinary text
// comes out unchanged and printable(printable(s)) === printable(s): applying it twice on one path does no harm.

/**
 * C0 controls and DEL, C1 controls, the bidi controls (ALM, LRM, RLM, LRE..RLO, LRI..PDI) and the Unicode line and
 * paragraph separators (which some terminals and every JavaScript parser take for line ends).
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** What JSON.stringify leaves raw of UNPRINTABLE: everything but C0, which it escapes itself. */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Readonly<Record<string, string>> = {
  "\u0007": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
};

const hex = (c: string, width: number): string => c.charCodeAt(0).toString(16).padStart(width, "0");

function escape(c: string): string {
  const short = SHORT[c];
  if (short !== undefined) return short;
  return c.charCodeAt(0) < 0x80 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`;
}

/** `text` with every control, bidi and line-separator character written as a visible escape. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}

/**
 * JSON.stringify(value, null, 2) with the characters it leaves raw (C1, bidi, line separators, DEL) written as `\uXXXX`
 * escapes too: the same JSON value, nothing in it a terminal acts on. They can only occur inside strings, where a
 * `\u` escape means the same character.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(UNPRINTABLE_IN_JSON, (c) => `\\u${hex(c, 4)}`);
}
