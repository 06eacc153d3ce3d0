// Two probes the checker needs: a sentinel (a VPC referenced by a VM, dry-run deleted every two seconds: when does
// protection return after a fault) and the consistency window (how long after a dependent's create is answered the
// webhook's denial names it: for the live lookup, the time its LIST needs to see the new object).
import type { OpRecord, WindowSample } from "./history.ts";
import { KINDS, collection } from "./kinds.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";
import { type Consumer } from "./env.ts";

export const SENTINEL_NS = "sentinel";
export const WINDOW_NS = "window";

export async function setupSentinel(o: WorkloadOptions, c: Consumer): Promise<void> {
  const ws = `/clusters/${c.path}`;
  for (const ns of [SENTINEL_NS, WINDOW_NS]) {
    await o.log.send(
      o.conn,
      {
        worker: "setup",
        kind: "create-namespace",
        cluster: c.cluster,
        workspace: c.path,
        resource: "namespaces",
        namespace: "",
        name: ns,
      },
      "POST",
      `${ws}/api/v1/namespaces`,
      { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } } },
    );
  }
  await o.log.send(
    o.conn,
    {
      worker: "setup",
      kind: "create",
      cluster: c.cluster,
      workspace: c.path,
      resource: KINDS.vpc.resource,
      namespace: SENTINEL_NS,
      name: "sentinel-vpc",
    },
    "POST",
    `${ws}${collection(KINDS.vpc, SENTINEL_NS)}`,
    { body: { apiVersion: "network.test.io/v1", kind: "VPC", metadata: { name: "sentinel-vpc" }, spec: {} } },
  );
  await o.log.send(
    o.conn,
    {
      worker: "setup",
      kind: "create",
      cluster: c.cluster,
      workspace: c.path,
      resource: KINDS.vm.resource,
      namespace: SENTINEL_NS,
      name: "sentinel-vm",
    },
    "POST",
    `${ws}${collection(KINDS.vm, SENTINEL_NS)}`,
    {
      body: {
        apiVersion: "compute.test.io/v1",
        kind: "VirtualMachine",
        metadata: { name: "sentinel-vm" },
        spec: { cpu: 1, vpcRef: { name: "sentinel-vpc" } },
      },
    },
  );
}

/** Dry-run deletes the sentinel VPC every `everyMs` until the signal; answers 409 while protection holds. */
export async function sentinelProbe(
  o: WorkloadOptions,
  c: Consumer,
  everyMs: number,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    await o.log.send(
      o.conn,
      {
        worker: "probe",
        kind: "probe",
        cluster: c.cluster,
        workspace: c.path,
        resource: KINDS.vpc.resource,
        namespace: SENTINEL_NS,
        name: "sentinel-vpc",
      },
      "DELETE",
      `/clusters/${c.path}${collection(KINDS.vpc, SENTINEL_NS)}/sentinel-vpc?dryRun=All`,
    );
    await sleep(everyMs, signal);
  }
}

type WindowEntry = (
  kind: "create" | "delete" | "window-probe",
  resource: string,
  name: string,
) => Omit<OpRecord, "id" | "sentAt" | "answeredAt" | "status" | "message">;

/** Now and then: a fresh VPC, a VM naming it, and dry-run deletes of the VPC until one is denied. */
export async function windowProbe(
  o: WorkloadOptions,
  c: Consumer,
  everyMs: number,
  samples: WindowSample[],
): Promise<void> {
  let n = 0;
  const ws = `/clusters/${c.path}`;
  const entry: WindowEntry = (kind, resource, name) => ({
    worker: "window",
    kind,
    cluster: c.cluster,
    workspace: c.path,
    resource,
    namespace: WINDOW_NS,
    name,
  });
  while (!o.signal.aborted) {
    await sleep(everyMs, o.signal);
    if (o.signal.aborted) return;
    const vpc = `w-${n++}`;
    await o.log.send(
      o.conn,
      entry("create", KINDS.vpc.resource, vpc),
      "POST",
      `${ws}${collection(KINDS.vpc, WINDOW_NS)}`,
      {
        body: { apiVersion: "network.test.io/v1", kind: "VPC", metadata: { name: vpc }, spec: {} },
      },
    );
    const created = await o.log.send(
      o.conn,
      entry("create", KINDS.vm.resource, `${vpc}-vm`),
      "POST",
      `${ws}${collection(KINDS.vm, WINDOW_NS)}`,
      {
        body: {
          apiVersion: "compute.test.io/v1",
          kind: "VirtualMachine",
          metadata: { name: `${vpc}-vm` },
          spec: { cpu: 1, vpcRef: { name: vpc } },
        },
      },
    );
    if (created.status !== 201) continue;
    await sampleWindow(o, ws, vpc, entry, samples);
    await o.log.send(
      o.conn,
      entry("delete", KINDS.vm.resource, `${vpc}-vm`),
      "DELETE",
      `${ws}${collection(KINDS.vm, WINDOW_NS)}/${vpc}-vm`,
    );
  }
}

/** Dry-run deletes of the VPC just after its VM was created, until one names the VM: one window sample. */
async function sampleWindow(
  o: WorkloadOptions,
  ws: string,
  vpc: string,
  entry: WindowEntry,
  samples: WindowSample[],
): Promise<void> {
  const t0 = o.log.ops.at(-1)?.answeredAt ?? Date.now();
  for (let i = 0; i < 100; i++) {
    const a = await o.log.send(
      o.conn,
      entry("window-probe", KINDS.vpc.resource, vpc),
      "DELETE",
      `${ws}${collection(KINDS.vpc, WINDOW_NS)}/${vpc}?dryRun=All`,
    );
    if (a.status === 409 && a.message.includes(`VirtualMachine/${vpc}-vm`)) {
      // The first request sent after this moment saw the VM: its send time bounds the window from above.
      samples.push({ visibleAfterMs: Math.max(0, (o.log.ops.at(-1)?.sentAt ?? Date.now()) - t0), at: t0 });
      return;
    }
    if (a.status !== 200) return; // a fault (the webhook is down): no sample
    await sleep(50);
  }
}
