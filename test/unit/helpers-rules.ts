// DependencyRule objects as kcp serves them (with the kcp.io/cluster annotation), for the controller's unit tests:
// the one builder (tools/kcp/rules.ts) with the unit tests' argument order.
import { dependencyRule, type DependencySpec } from "../../tools/kcp/rules.ts";

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
