// The example objects (VPCs, subnets, VMs of test/fixtures) and deletes read the way a client sees them: the
// vocabulary of the end-to-end tests, the demo and the benchmarks.
import { VWC_NAME } from "../../src/api/types.ts";
import { DEPENDENCY_RULES_PATH, WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { ApiError, type RestClient } from "../../src/kcp/rest.ts";
import type { KObject } from "./api.ts";

export const VPCS = "/apis/network.test.io/v1/namespaces/NS/vpcs";
export const SUBNETS = "/apis/network.test.io/v1/namespaces/NS/subnets";
export const VMS = "/apis/compute.test.io/v1/namespaces/NS/virtualmachines";
export const VWC_PATH = `${WEBHOOK_CONFIGURATIONS_PATH}/${VWC_NAME}`;
export const RULES = DEPENDENCY_RULES_PATH;

export const at = (collection: string, ns = "default"): string => collection.replace("NS", ns);

export function vpc(name: string, ns = "default", annotations?: Record<string, string>): KObject {
  return {
    apiVersion: "network.test.io/v1",
    kind: "VPC",
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { cidr: "10.0.0.0/16" },
  };
}

export function subnet(name: string, ns = "default"): KObject {
  return { apiVersion: "network.test.io/v1", kind: "Subnet", metadata: { name, namespace: ns }, spec: {} };
}

export function vm(name: string, refs: { vpc?: string; subnet?: string }, ns = "default"): KObject {
  return {
    apiVersion: "compute.test.io/v1",
    kind: "VirtualMachine",
    metadata: { name, namespace: ns },
    spec: {
      cpu: 1,
      ...(refs.vpc ? { vpcRef: { name: refs.vpc } } : {}),
      ...(refs.subnet ? { subnetRef: { name: refs.subnet } } : {}),
    },
  };
}

export type DeleteOutcome = { allowed: true } | { allowed: false; status: number; message: string };

/** DELETE as a client sends it; a refusal comes back as its status code and kcp's message. */
export async function tryDelete(ws: RestClient, path: string, opts: { dryRun?: boolean } = {}): Promise<DeleteOutcome> {
  try {
    await ws.request("DELETE", path, opts.dryRun ? { query: { dryRun: "All" } } : {});
    return { allowed: true };
  } catch (err) {
    if (err instanceof ApiError) return { allowed: false, status: err.status, message: err.message };
    throw err;
  }
}

export async function exists(ws: RestClient, path: string): Promise<boolean> {
  return (await ws.getOptional(path)) !== undefined;
}
