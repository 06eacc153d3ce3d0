// The careless author: at seeded random moments the soak's provider adds, and later removes, a faulty rule: gadgets
// depend on VPCs at an apiExportRef.path that answers 403 (a workspace under consumer1, whose parent neither the
// controller nor the webhook may read). It names the VPCs the workers delete, yet its dependents exist nowhere (no
// worker creates a gadget), so the product must decide every delete as if the rule did not exist: any 503 it causes is
// collateral (I5). Each add..remove is recorded as a fault with the rule's dependent resource.
import type { KObject } from "../kcp/api.ts";
import { PATHS } from "../kcp/topology.ts";
import type { FaultRecord } from "./history.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";
import { SOAK_PROVIDER } from "./provider.ts";

export const CARELESS_RULE = "careless-gadgets";
export const CARELESS_DEPENDENT = "gadgets.soak.test.io";
/** Under consumer1, which grants the controller and the webhook nothing: resolving it answers 403. */
export const UNREADABLE_PATH = `${PATHS.consumer1}:private`;

export function carelessRule(): KObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name: CARELESS_RULE },
    spec: {
      dependent: {
        apiExportName: "soak.test.io",
        group: "soak.test.io",
        version: "v1",
        kind: "Gadget",
        resource: "gadgets",
      },
      dependencies: [
        {
          apiExportRef: { path: UNREADABLE_PATH, name: "network.test.io" },
          group: "network.test.io",
          version: "v1",
          resource: "vpcs",
          fieldRef: { path: ".spec.vpcRef.name" },
        },
      ],
    },
  };
}

/** Adds the faulty rule after a seeded pause, removes it after another, until the run stops (then removes it). */
export async function carelessAuthor(
  o: WorkloadOptions,
  everyMs: [number, number],
  faults: FaultRecord[],
  log: (line: string) => void,
): Promise<void> {
  const { rng, conn } = o;
  const rules = `/clusters/${SOAK_PROVIDER}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
  const base = {
    worker: "careless",
    cluster: "",
    workspace: SOAK_PROVIDER,
    resource: "dependencyrules",
    namespace: "",
  };
  while (!o.signal.aborted) {
    await sleep(rng.int(...everyMs), o.signal);
    if (o.signal.aborted) break;
    const startAt = Date.now(); // kcp may store it, and the webhook see it, before the answer arrives
    const added = await o.log.send(
      conn,
      { ...base, kind: "careless-rule", name: `${CARELESS_RULE}:add` },
      "PATCH",
      `${rules}/${CARELESS_RULE}?fieldManager=soak-careless&force=true`,
      { body: carelessRule(), contentType: "application/apply-patch+yaml" },
    );
    if (added.status < 200 || added.status >= 300) continue; // refused at admission: nothing stood
    await sleep(rng.int(...everyMs), o.signal);
    // Removed even when the run stops meanwhile: the drain and the next run must not inherit it.
    await o.log.send(
      conn,
      { ...base, kind: "careless-rule", name: `${CARELESS_RULE}:delete` },
      "DELETE",
      `${rules}/${CARELESS_RULE}`,
    );
    const f: FaultRecord = {
      kind: "careless-rule",
      target: `${SOAK_PROVIDER}/${CARELESS_RULE} (path ${UNREADABLE_PATH})`,
      startAt,
      endAt: Date.now(),
      webhookDown: false,
      dependent: CARELESS_DEPENDENT,
    };
    faults.push(f);
    log(`fault careless-rule (${f.target}) ${Math.round((f.endAt - f.startAt) / 100) / 10} s`);
  }
}
