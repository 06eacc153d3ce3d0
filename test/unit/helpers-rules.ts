// Builders of DependencyRule objects as kcp serves them, for the controller's unit tests.
import { CLUSTER_ANNOTATION } from "../../src/api/types.ts";

export interface DepSpec {
  path?: string;
  group?: string;
  version?: string;
  resource: string;
  fieldPath?: string;
}

export function ruleObject(
  cluster: string,
  name: string,
  dependent: { group?: string; resource: string; kind?: string },
  deps: DepSpec[],
  generation = 1,
): Record<string, unknown> {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name, generation, annotations: { [CLUSTER_ANNOTATION]: cluster } },
    spec: {
      dependent: {
        apiExportName: dependent.group ?? "compute.test.io",
        group: dependent.group ?? "compute.test.io",
        version: "v1",
        kind: dependent.kind ?? "VirtualMachine",
        resource: dependent.resource,
      },
      dependencies: deps.map((d) => ({
        apiExportRef: { path: d.path ?? "root:network-provider", name: d.group ?? "network.test.io" },
        group: d.group ?? "network.test.io",
        version: d.version ?? "v1",
        resource: d.resource,
        fieldRef: { path: d.fieldPath ?? `.spec.${d.resource}Ref.name` },
      })),
    },
  };
}
