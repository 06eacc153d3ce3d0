// The one typed source of DependencyRule's OpenAPI v3 schema. The kcp manifests (deploy/kcp/) are generated from it
// and the controller validates observed rules against it, so what kcp refuses and what the controller reports agree.
// Spec fields, patterns and lengths are the Go original's so its manifests apply unchanged; the only
// tightenings are `dependencies` minItems 1 and maxItems and at most MAX_PROVIDER_PATH_SEGMENTS segments in
// apiExportRef.path (each may cost a read of kcp), and fieldRef.path is widened to allow `[*]` and `[n]`. One additive
// extension: a dependency may leave out apiExportRef and name a core type of the consumer workspace itself (a local
// target, group ""); the rule model (rule.ts) allows that only for LOCAL_TARGET_RESOURCES.
import { FIELD_PATH_PATTERN } from "../fieldpath/fieldpath.ts";
import { CONDITION_TYPES } from "./types.ts";
import { MAX_PROVIDER_PATH_SEGMENTS, PROVIDER_PATH_PATTERN } from "./wire.ts";

/** The subset of Kubernetes' JSONSchemaProps this API uses (structural schema). */
export interface JSONSchemaProps {
  type?: "object" | "array" | "string" | "integer" | "boolean";
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  items?: JSONSchemaProps;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  enum?: string[];
  default?: string;
  format?: "date-time" | "int64";
  "x-kubernetes-list-type"?: "atomic" | "map" | "set";
  "x-kubernetes-list-map-keys"?: string[];
}

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** Most `spec.dependencies` entries a rule may have (see the schema description for why there is a cap). */
export const MAX_DEPENDENCIES = 32;

/** DNS-subdomain-like names (API groups, APIExport names). */
export const DNS_SUBDOMAIN_PATTERN = "^[a-z]([-a-z0-9]*[a-z0-9])?(\\.[a-z]([-a-z0-9]*[a-z0-9])?)*$";
/** v1, v1alpha1, v2beta3 — not v0, v01, v1.0, v1alpha, v1alpha0. */
export const VERSION_PATTERN = "^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$";
export const KIND_PATTERN = "^[A-Z][A-Za-z0-9]*$";
/** Plural resource names, lower case without hyphens or dots, as in the original. */
export const RESOURCE_PATTERN = "^[a-z][a-z0-9]*$";

function str(description: string, pattern: string, maxLength: number, minLength = 1): JSONSchemaProps {
  return { type: "string", description, minLength, maxLength, pattern };
}

const group = (what: string): JSONSchemaProps => str(`API group of the ${what}.`, DNS_SUBDOMAIN_PATTERN, 253);

/**
 * Core types of the consumer workspace itself that a dependency without `apiExportRef` may name (a local target):
 * kcp consults only that workspace's own webhook configurations for them (docs/architecture.md, "Local targets").
 */
export const LOCAL_TARGET_RESOURCES = ["configmaps", "secrets"] as const;
export const LOCAL_TARGET_VERSION = "v1";

/** A dependency's group: as the original's, or empty (the core group) for a local target. */
const dependencyGroup: JSONSchemaProps = str(
  'API group of the dependency; "" (the core group) only for a type of the consumer workspace itself ' +
    `(no apiExportRef): ${LOCAL_TARGET_RESOURCES.join(", ")} at ${LOCAL_TARGET_VERSION}.`,
  `^$|${DNS_SUBDOMAIN_PATTERN}`,
  253,
  0,
);
const version = (what: string): JSONSchemaProps => str(`API version of the ${what}.`, VERSION_PATTERN, 63);
const resource = (what: string): JSONSchemaProps =>
  str(`Plural resource name of the ${what}, e.g. vpcs.`, RESOURCE_PATTERN, 63);

const dependentSchema: JSONSchemaProps = {
  type: "object",
  description: "The resource that depends on others (served by an APIExport in this rule's workspace).",
  required: ["apiExportName", "group", "kind", "resource", "version"],
  properties: {
    apiExportName: str(
      "Name of the APIExport serving the dependent; it must be in the same workspace as the DependencyRule.",
      DNS_SUBDOMAIN_PATTERN,
      253,
    ),
    group: group("dependent"),
    version: version("dependent"),
    kind: str("Kind of the dependent, e.g. VirtualMachine.", KIND_PATTERN, 63),
    resource: resource("dependent"),
  },
};

const dependencySchema: JSONSchemaProps = {
  type: "object",
  description: "A resource of another provider that the dependent refers to; it cannot be deleted while referenced.",
  required: ["fieldRef", "group", "resource", "version"],
  properties: {
    apiExportRef: {
      type: "object",
      description:
        "The APIExport serving the dependency; its workspace gets the deletion webhook. Left out, the dependency is " +
        'a type of the consumer workspace itself (group "": secrets or configmaps), protected in each consumer ' +
        "workspace that accepted the validatingwebhookconfigurations claim of the dependent's APIExport.",
      required: ["name", "path"],
      properties: {
        path: str(
          `Workspace path of the APIExport, e.g. root:network-provider; at most ${MAX_PROVIDER_PATH_SEGMENTS} ` +
            "segments (root included), because resolving a path may read one Workspace per segment.",
          PROVIDER_PATH_PATTERN,
          253,
        ),
        name: str("Name of the APIExport.", DNS_SUBDOMAIN_PATTERN, 253),
      },
    },
    group: dependencyGroup,
    version: version("dependency"),
    resource: resource("dependency"),
    fieldRef: {
      type: "object",
      description: "Where in a dependent the dependency's name is found.",
      required: ["path"],
      properties: {
        path: str(
          "Field path in the dependent holding the dependency's name, e.g. .spec.vpcRef.name or " +
            ".spec.nics[*].subnetRef.name ([*] every list element, [n] one element).",
          FIELD_PATH_PATTERN,
          253,
          2,
        ),
      },
    },
  },
};

/** Same shape as metav1.Condition, so generic tooling (kubectl wait --for=condition=Ready) understands it. */
const conditionSchema: JSONSchemaProps = {
  type: "object",
  required: ["lastTransitionTime", "message", "reason", "status", "type"],
  properties: {
    type: { type: "string", description: "One of " + CONDITION_TYPES.join(", ") + ".", maxLength: 316 },
    status: { type: "string", enum: ["True", "False", "Unknown"] },
    reason: { type: "string", description: "CamelCase reason for the condition's last transition.", maxLength: 1024 },
    message: { type: "string", description: "Human-readable details.", maxLength: 32768 },
    observedGeneration: { type: "integer", format: "int64", minimum: 0 },
    lastTransitionTime: { type: "string", format: "date-time" },
  },
};

const statusSchema: JSONSchemaProps = {
  type: "object",
  description: "Written by the controller.",
  properties: {
    observedGeneration: {
      type: "integer",
      format: "int64",
      description: "The metadata.generation this status was computed from.",
    },
    dependencyCount: {
      type: "integer",
      format: "int64",
      description: "Number of entries in spec.dependencies (shown by kubectl get).",
    },
    conditions: {
      type: "array",
      items: conditionSchema,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
    },
  },
};

/** `Deny` refuses a referenced DELETE; `Warn` lets it through with a warning, to roll a new rule out safely. */
export const ENFORCEMENTS = ["Deny", "Warn"] as const;
export type Enforcement = (typeof ENFORCEMENTS)[number];

export const SPEC_SCHEMA: JSONSchemaProps = {
  type: "object",
  required: ["dependencies", "dependent"],
  properties: {
    enforcement: {
      type: "string",
      description:
        "Deny (the default) refuses deleting a dependency while a dependent references it. Warn allows the delete " +
        "and returns the refusal as a warning (kubectl prints it), to roll a new rule out without breaking anyone.",
      enum: [...ENFORCEMENTS],
      default: "Deny",
    },
    dependent: dependentSchema,
    dependencies: {
      type: "array",
      description:
        `The resources the dependent refers to: at least one, at most ${MAX_DEPENDENCIES}. The cap bounds the work ` +
        "one rule adds to every protected DELETE (each entry is a field path evaluated on every dependent) and the " +
        "size of the webhook configurations it contributes to.",
      minItems: 1,
      maxItems: MAX_DEPENDENCIES,
      items: dependencySchema,
    },
  },
};

/** Schema of a whole DependencyRule object (the APIResourceSchema's `versions[0].schema.openAPIV3Schema`). */
export const DEPENDENCY_RULE_SCHEMA: JSONSchemaProps = {
  type: "object",
  description:
    "DependencyRule declares that a provider's resource (the dependent) refers to resources of other providers " +
    "(its dependencies); a dependency cannot be deleted while a dependent still refers to it.",
  required: ["spec"],
  properties: {
    apiVersion: { type: "string", description: "APIVersion of this object." },
    kind: { type: "string", description: "Kind of this object." },
    metadata: { type: "object" },
    spec: SPEC_SCHEMA,
    status: statusSchema,
  },
};

/** Schema of one `spec.dependencies[]` entry; the controller checks entries one by one. */
export const DEPENDENCY_SCHEMA = dependencySchema;
export const DEPENDENT_SCHEMA = dependentSchema;

// A JSONPath cannot count list items, so the controller writes status.dependencyCount for the Dependencies column.
export const PRINTER_COLUMNS: PrinterColumn[] = [
  { name: "Dependent", type: "string", jsonPath: ".spec.dependent.kind", description: "Kind of the dependent." },
  {
    name: "Enforcement",
    type: "string",
    jsonPath: ".spec.enforcement",
    description: "Deny refuses referenced deletes; Warn only warns.",
  },
  {
    name: "Dependencies",
    type: "integer",
    jsonPath: ".status.dependencyCount",
    description: "Number of dependencies (set by the controller).",
  },
  {
    name: "Ready",
    type: "string",
    jsonPath: '.status.conditions[?(@.type=="Ready")].status',
    description: "Whether the rule's webhooks are installed.",
  },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];
