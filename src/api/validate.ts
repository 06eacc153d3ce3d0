// Checks a value against the JSONSchemaProps subset in schema.ts, the way the Kubernetes API server does for custom
// resources: unknown fields are pruned there, not refused, so they are ignored here; strings are measured in
// characters (code points). The controller uses it on rules it reads, because objects stored before a schema
// change (or by the original's looser schema) are never re-validated by kcp.
import type { JSONSchemaProps } from "./schema.ts";

export interface FieldError {
  /** `spec.dependencies[0].fieldRef.path` */
  field: string;
  message: string;
}

/** `field: message`, as the API server prints it. */
export function formatFieldError(e: FieldError): string {
  return `${e.field}: ${e.message}`;
}

const patternCache = new Map<string, RegExp>();

function regex(pattern: string): RegExp {
  let re = patternCache.get(pattern);
  if (!re) {
    // The schema's patterns use only syntax that means the same in RE2 (the API server) and in JavaScript.
    re = new RegExp(pattern, "u");
    patternCache.set(pattern, re);
  }
  return re;
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** All errors of `value` against `schema`, in a stable order (schema property order, then array index). */
export function validate(schema: JSONSchemaProps, value: unknown, field = ""): FieldError[] {
  const errors: FieldError[] = [];
  const at = field || "<root>";
  if (schema.type !== undefined && typeOf(value) !== schema.type) {
    errors.push({ field: at, message: `Invalid value: ${typeOf(value)}: must be of type ${schema.type}` });
    return errors;
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength)
      errors.push({
        field: at,
        message: `Invalid value: ${JSON.stringify(value)}: should be at least ${schema.minLength} chars long`,
      });
    if (schema.maxLength !== undefined && length > schema.maxLength)
      errors.push({ field: at, message: `Too long: may not be longer than ${schema.maxLength}` });
    if (schema.pattern !== undefined && !regex(schema.pattern).test(value))
      errors.push({ field: at, message: `Invalid value: ${JSON.stringify(value)}: should match '${schema.pattern}'` });
    if (schema.enum !== undefined && !schema.enum.includes(value))
      errors.push({
        field: at,
        message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`,
      });
  }
  if (typeof value === "number" && schema.minimum !== undefined && value < schema.minimum)
    errors.push({
      field: at,
      message: `Invalid value: ${value}: should be greater than or equal to ${schema.minimum}`,
    });
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      errors.push({
        field: at,
        message: `Invalid value: ${value.length}: should have at least ${schema.minItems} items`,
      });
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      errors.push({ field: at, message: `Too many: ${value.length}: must have at most ${schema.maxItems} items` });
    if (schema.items)
      value.forEach((item, i) => errors.push(...validate(schema.items as JSONSchemaProps, item, `${field}[${i}]`)));
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(obj, name) || obj[name] === null)
        errors.push({ field: field ? `${field}.${name}` : name, message: "Required value" });
    }
    for (const [name, sub] of Object.entries(schema.properties ?? {})) {
      if (!Object.hasOwn(obj, name) || obj[name] === null) continue;
      errors.push(...validate(sub, obj[name], field ? `${field}.${name}` : name));
    }
  }
  return errors;
}
