// DependencyRules for the controller's integration tests: the one builder (tools/kcp/rules.ts), applied by a
// provider admin (so without the kcp.io/cluster annotation kcp adds itself).
import type { KObject } from "../../tools/kcp/api.ts";
import { dependencyRule, type DependencySpec } from "../../tools/kcp/rules.ts";

export type Dep = DependencySpec;

export function rule(
  name: string,
  deps: Dep[],
  dependent = { group: "compute.test.io", kind: "VirtualMachine", resource: "virtualmachines" },
): KObject {
  return dependencyRule(name, deps, { dependent });
}

export interface RuleWithStatus {
  metadata: { generation?: number };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}
