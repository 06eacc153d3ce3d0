// The careless author: at seeded random moments a faulty rule is added, and later removed, in one of two flavours
// drawn per episode:
//   - unreadable-path: the soak's provider says gadgets depend on VPCs at an apiExportRef.path that answers 403 (a
//     workspace under consumer1, whose parent neither the controller nor the webhook may read);
//   - no-index-consent: a provider of its own (root:careless-provider: exports widgets, binds the dep-ctrl export,
//     never applies deploy/rbac/provider-index.yaml) says widgets depend on VPCs. Nobody binds its export.
// Either names the VPCs the workers delete, yet its dependents exist nowhere (no worker creates a gadget, no workspace
// binds widgets), so the product must decide every delete as if the rule did not exist: any 503 it causes is
// collateral (I5). Each add..remove is recorded as a fault with the rule's dependent resource and its flavour.
import type { KObject } from "../kcp/api.ts";
import { PATHS } from "../kcp/topology.ts";
import type { CarelessFlavour, FaultRecord } from "./history.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";
import { SOAK_PROVIDER } from "./provider.ts";
import { CARELESS_EXPORT, CARELESS_PROVIDER } from "./tenants.ts";

export const CARELESS_RULE = "careless-gadgets";
export const CARELESS_DEPENDENT = "gadgets.soak.test.io";
/** Under consumer1, which grants the controller and the webhook nothing: resolving it answers 403. */
export const UNREADABLE_PATH = `${PATHS.consumer1}:private`;

interface Flavour {
  workspace: string;
  rule: string;
  dependent: string;
  target: string;
  body: (vars: Record<string, string>) => KObject;
}

const FLAVOURS: Record<CarelessFlavour, Flavour> = {
  "unreadable-path": {
    workspace: SOAK_PROVIDER,
    rule: CARELESS_RULE,
    dependent: CARELESS_DEPENDENT,
    target: `${SOAK_PROVIDER}/${CARELESS_RULE} (path ${UNREADABLE_PATH})`,
    body: () => carelessRule(),
  },
  "no-index-consent": {
    workspace: CARELESS_PROVIDER,
    rule: "careless-widgets",
    dependent: `widgets.${CARELESS_EXPORT}`,
    target: `${CARELESS_PROVIDER}/careless-widgets (no index consent)`,
    body: (vars) =>
      faultyRule(
        "careless-widgets",
        { apiExportName: CARELESS_EXPORT, group: CARELESS_EXPORT, kind: "Widget" },
        {
          path: vars["NETWORK_PROVIDER_PATH"] ?? PATHS.network,
        },
      ),
  },
};

function faultyRule(
  name: string,
  dependent: { apiExportName: string; group: string; kind: string },
  ref: { path: string },
): KObject {
  return {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: { name },
    spec: {
      dependent: { ...dependent, version: "v1", resource: `${dependent.kind.toLowerCase()}s` },
      dependencies: [
        {
          apiExportRef: { path: ref.path, name: "network.test.io" },
          group: "network.test.io",
          version: "v1",
          resource: "vpcs",
          fieldRef: { path: ".spec.vpcRef.name" },
        },
      ],
    },
  };
}

export function carelessRule(): KObject {
  return faultyRule(
    CARELESS_RULE,
    { apiExportName: "soak.test.io", group: "soak.test.io", kind: "Gadget" },
    {
      path: UNREADABLE_PATH,
    },
  );
}

/** Adds a faulty rule after a seeded pause, removes it after another, until the run stops (then removes it). */
export async function carelessAuthor(
  o: WorkloadOptions,
  everyMs: [number, number],
  faults: FaultRecord[],
  log: (line: string) => void,
): Promise<void> {
  const { rng, conn } = o;
  while (!o.signal.aborted) {
    await sleep(rng.int(...everyMs), o.signal);
    if (o.signal.aborted) break;
    const flavour = rng.pick(["unreadable-path", "no-index-consent"] as const);
    const f = FLAVOURS[flavour];
    const rules = `/clusters/${f.workspace}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
    const base = {
      worker: "careless",
      cluster: "",
      workspace: f.workspace,
      resource: "dependencyrules",
      namespace: "",
    };
    const startAt = Date.now(); // kcp may store it, and the webhook see it, before the answer arrives
    const added = await o.log.send(
      conn,
      { ...base, kind: "careless-rule", name: `${f.rule}:add` },
      "PATCH",
      `${rules}/${f.rule}?fieldManager=soak-careless&force=true`,
      { body: f.body(o.vars), contentType: "application/apply-patch+yaml" },
    );
    if (added.status < 200 || added.status >= 300) continue; // refused at admission: nothing stood
    await sleep(rng.int(...everyMs), o.signal);
    // Removed even when the run stops meanwhile: the drain and the next run must not inherit it.
    await o.log.send(
      conn,
      { ...base, kind: "careless-rule", name: `${f.rule}:delete` },
      "DELETE",
      `${rules}/${f.rule}`,
    );
    const fault: FaultRecord = {
      kind: "careless-rule",
      target: f.target,
      startAt,
      endAt: Date.now(),
      webhookDown: false,
      dependent: f.dependent,
      flavour,
    };
    faults.push(fault);
    log(`fault careless-rule ${flavour} (${f.target}) ${Math.round((fault.endAt - fault.startAt) / 100) / 10} s`);
  }
}
