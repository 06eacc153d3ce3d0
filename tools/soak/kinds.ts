// The object kinds the workload writes (dependencies and dependents, namespaced and cluster-scoped, and a core type of
// the consumer workspace itself: Secrets, which Endpoints name through a local-target rule), how many names of each
// it draws from, and the namespaces it uses: small pools, so operations collide on the same objects.
export interface Kind {
  resource: string; // group-qualified, as the history names it
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** What a fresh object carries beside its metadata (default: an empty spec). */
  fresh?: Record<string, unknown>;
}

export const KINDS = {
  vpc: {
    resource: "vpcs.network.test.io",
    apiVersion: "network.test.io/v1",
    kind: "VPC",
    plural: "vpcs",
    namespaced: true,
  },
  subnet: {
    resource: "subnets.network.test.io",
    apiVersion: "network.test.io/v1",
    kind: "Subnet",
    plural: "subnets",
    namespaced: true,
  },
  zone: {
    resource: "zones.soak.test.io",
    apiVersion: "soak.test.io/v1",
    kind: "Zone",
    plural: "zones",
    namespaced: false,
  },
  vm: {
    resource: "virtualmachines.compute.test.io",
    apiVersion: "compute.test.io/v1",
    kind: "VirtualMachine",
    plural: "virtualmachines",
    namespaced: true,
  },
  server: {
    resource: "servers.soak.test.io",
    apiVersion: "soak.test.io/v1",
    kind: "Server",
    plural: "servers",
    namespaced: true,
  },
  // A core type: the history names it by its resource alone, as a rule's `group: ""` dependency does.
  secret: {
    resource: "secrets",
    apiVersion: "v1",
    kind: "Secret",
    plural: "secrets",
    namespaced: true,
    fresh: { stringData: { token: "soak" } },
  },
  endpoint: {
    resource: "endpoints.vault.test.io",
    apiVersion: "vault.test.io/v1",
    kind: "Endpoint",
    plural: "endpoints",
    namespaced: true,
  },
} as const satisfies Record<string, Kind>;

export const POOL = { vpc: 5, subnet: 6, zone: 4, vm: 6, server: 6, secret: 5, endpoint: 6 };
export const NAMESPACES = ["default", "ns-a", "ns-b"];
export const DELETABLE_NAMESPACES = ["ns-a", "ns-b"];

/** Where the kind is served: `/api/v1` for the core group, `/apis/<group>/<version>` otherwise. */
export const apiPath = (k: Kind): string =>
  k.apiVersion.includes("/") ? `/apis/${k.apiVersion}` : `/api/${k.apiVersion}`;

export function collection(k: Kind, ns: string): string {
  const prefix = apiPath(k);
  return k.namespaced ? `${prefix}/namespaces/${ns}/${k.plural}` : `${prefix}/${k.plural}`;
}
