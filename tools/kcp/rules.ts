// The one builder of DependencyRule objects for tests, benchmarks and the soak: VMs (compute provider) depending on
// network resources, as the fixtures in test/fixtures/ define them. Every default is here, so they cannot drift.
import { CLUSTER_ANNOTATION } from "../../src/api/types.ts";
import type { KObject } from "./api.ts";

export interface DependentSpec {
  apiExportName?: string;
  group?: string;
  version?: string;
  kind?: string;
  resource?: string;
}

export interface DependencySpec {
  /** apiExportRef.path; default root:network-provider. */
  path?: string;
  /** apiExportRef.name; default the group. */
  exportName?: string;
  group?: string;
  version?: string;
  resource: string;
  /** fieldRef.path; default `.spec.<resource without its plural s>Ref.name` (`.spec.vpcRef.name`). */
  field?: string;
  /** A local target: no apiExportRef, group "" unless given (a Secret or ConfigMap of the consumer workspace). */
  local?: boolean;
}

export interface RuleOptions {
  dependent?: DependentSpec;
  /** The `kcp.io/cluster` annotation, as kcp serves the object (unit tests); absent when the rule is applied. */
  cluster?: string;
  generation?: number;
  enforcement?: "Deny" | "Warn";
}

export function dependencyRule(name: string, dependencies: DependencySpec[], opts: RuleOptions = {}): KObject {
  const dependent = {
    group: "compute.test.io",
    kind: "VirtualMachine",
    resource: "virtualmachines",
    ...opts.dependent,
  };
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name,
      ...(opts.generation !== undefined ? { generation: opts.generation } : {}),
      ...(opts.cluster !== undefined ? { annotations: { [CLUSTER_ANNOTATION]: opts.cluster } } : {}),
    },
    spec: {
      ...(opts.enforcement ? { enforcement: opts.enforcement } : {}),
      dependent: { apiExportName: dependent.group, version: "v1", ...dependent },
      dependencies: dependencies.map((d) => {
        const group = d.group ?? (d.local ? "" : "network.test.io");
        return {
          ...(d.local
            ? {}
            : { apiExportRef: { path: d.path ?? "root:network-provider", name: d.exportName ?? group } }),
          group,
          version: d.version ?? "v1",
          resource: d.resource,
          fieldRef: { path: d.field ?? `.spec.${d.resource.replace(/s$/, "")}Ref.name` },
        };
      }),
    },
  };
}
