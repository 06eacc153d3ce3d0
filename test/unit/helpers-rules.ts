// DependencyRule objects as kcp serves them (with the kcp.io/cluster annotation), for the controller's unit tests:
// the one builder (tools/kcp/rules.ts) with the unit tests' argument order.
import { parseFieldPath, type FieldPath } from "../../src/fieldpath/fieldpath.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { Lookup } from "../../src/webhook/admission.ts";
import { dependencyRule, type DependencySpec } from "../../tools/kcp/rules.ts";

export interface DepSpec {
  path?: string;
  group?: string;
  version?: string;
  resource: string;
  fieldPath?: string;
  exportName?: string;
  /** A local target: no apiExportRef (tools/kcp/rules.ts). */
  local?: boolean;
}

export function ruleObject(
  cluster: string,
  name: string,
  dependent: { group?: string; resource: string; kind?: string },
  deps: DepSpec[],
  generation = 1,
): Record<string, unknown> {
  const specs: DependencySpec[] = deps.map(({ fieldPath, ...d }) => ({
    ...d,
    ...(fieldPath ? { field: fieldPath } : {}),
  }));
  return dependencyRule(name, specs, {
    cluster,
    generation,
    dependent: { ...dependent, apiExportName: dependent.group ?? "compute.test.io" },
  });
}

/** The dependent type the webhook's unit tests use: VirtualMachines of compute.example.io, exported by "compute". */
export const VM_DEPENDENT = {
  group: "compute.example.io",
  version: "v1",
  resource: "virtualmachines",
  kind: "VirtualMachine",
  apiExportName: "compute.example.io",
  exportCluster: "compute" as LogicalClusterName,
};

/** A field path the tests know to be valid. */
export function fp(source: string): FieldPath {
  const p = parseFieldPath(source);
  if (!p.ok) throw new Error(p.error);
  return p.path;
}

/** A lookup for VMs naming `my-vpc` at `.spec.vpcRef.name` in consumer1, with `o` on top. */
export function vmLookup(o: Partial<Lookup> = {}): Lookup {
  return {
    consumer: "consumer1" as LogicalClusterName,
    dependent: VM_DEPENDENT,
    name: "my-vpc",
    fieldPaths: [fp(".spec.vpcRef.name")],
    rules: ["r/1"],
    enforcement: "Deny",
    ...o,
  };
}
