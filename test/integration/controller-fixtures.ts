// DependencyRules for the controller's integration tests: VMs (compute provider) depending on network resources.
import type { KObject } from "../../tools/kcp/api.ts";
import { PATHS } from "../../tools/kcp/topology.ts";

export interface Dep {
  path?: string;
  group?: string;
  resource: string;
  field?: string;
}

export function rule(
  name: string,
  deps: Dep[],
  dependent = { group: "compute.test.io", kind: "VirtualMachine", resource: "virtualmachines" },
): KObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: { apiExportName: dependent.group, version: "v1", ...dependent },
      dependencies: deps.map((d) => ({
        apiExportRef: { path: d.path ?? PATHS.network, name: d.group ?? "network.test.io" },
        group: d.group ?? "network.test.io",
        version: "v1",
        resource: d.resource,
        fieldRef: { path: d.field ?? `.spec.${d.resource.replace(/s$/, "")}Ref.name` },
      })),
    },
  };
}

export interface RuleWithStatus {
  metadata: { generation?: number };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}
