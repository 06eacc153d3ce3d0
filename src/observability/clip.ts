// Log fields that come from a request are the caller's text. Clip them, so a forged review can neither flood the log
// nor pass for a structured field (control characters are escaped by the JSON logger itself).
export const MAX_LOGGED_CHARS = 256;
/** Items of a logged list (warnings, names); the rest is counted, not written. */
export const MAX_LOGGED_ITEMS = 16;

function clipString(value: string): string {
  return value.length <= MAX_LOGGED_CHARS ? value : `${value.slice(0, MAX_LOGGED_CHARS)}…(${value.length} chars)`;
}

/** A string clipped; a list cut to its first items, each clipped (nested lists and objects are not written). */
export function clip(value: unknown): unknown {
  if (typeof value === "string") return clipString(value);
  if (!Array.isArray(value)) return value;
  const items: unknown[] = value
    .slice(0, MAX_LOGGED_ITEMS)
    .map((v: unknown) => (typeof v === "string" ? clipString(v) : typeof v === "object" && v !== null ? "[…]" : v));
  if (value.length > MAX_LOGGED_ITEMS) items.push(`…(${value.length} items)`);
  return items;
}

/** The same fields with every string and list clipped; other values (booleans, numbers, undefined) pass as they are. */
export function logSafe<T extends Record<string, unknown>>(fields: T): Record<keyof T, unknown> {
  const out = {} as Record<keyof T, unknown>;
  for (const key of Object.keys(fields) as (keyof T)[]) out[key] = clip(fields[key]);
  return out;
}
