// Log fields that come from a request are the caller's text. Clip them, so a forged review can neither flood the log
// nor pass for a structured field (control characters are escaped by the JSON logger itself).
export const MAX_LOGGED_CHARS = 256;

export function clip(value: unknown): unknown {
  if (typeof value !== "string") return value;
  return value.length <= MAX_LOGGED_CHARS ? value : `${value.slice(0, MAX_LOGGED_CHARS)}…(${value.length} chars)`;
}

/** The same fields with every string clipped; non-strings (booleans, numbers, undefined) pass as they are. */
export function logSafe<T extends Record<string, unknown>>(fields: T): Record<keyof T, unknown> {
  const out = {} as Record<keyof T, unknown>;
  for (const key of Object.keys(fields) as (keyof T)[]) out[key] = clip(fields[key]);
  return out;
}
