// The seeded workload: concurrent workers that create, update and delete dependencies (VPCs, subnets, cluster-scoped
// zones) and dependents (VMs with single references, servers with `[*]` subnet lists, references changing on
// update), DELETECOLLECTION and dry-run deletes, namespace deletions, the skip-protection annotation now and then,
// and rule churn. Every request is logged with its sent and answered times, its status and kcp's message.
import { request, type Answer, type ShardConn } from "./kube.ts";
import type { OpKind, OpRecord } from "./history.ts";
import type { Rng } from "./rng.ts";
import { SOAK_PROVIDER, SOAK_RULE, serverRule, type Consumer, type ServerRuleShape } from "./env.ts";

export const SKIP = "dependencies.opendefense.cloud/skip-protection";

interface Kind {
  resource: string; // group-qualified, as the history names it
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
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
} as const satisfies Record<string, Kind>;

const POOL = { vpc: 5, subnet: 6, zone: 4, vm: 6, server: 6 };
export const NAMESPACES = ["default", "ns-a", "ns-b"];
export const DELETABLE_NAMESPACES = ["ns-a", "ns-b"];

export function collection(k: Kind, ns: string): string {
  const prefix = `/apis/${k.apiVersion}`;
  return k.namespaced ? `${prefix}/namespaces/${ns}/${k.plural}` : `${prefix}/${k.plural}`;
}

/** The request log every worker writes to. */
export class OpLog {
  readonly ops: OpRecord[] = [];
  private nextId = 1;

  async send(
    conn: ShardConn,
    entry: Omit<OpRecord, "id" | "sentAt" | "answeredAt" | "status" | "message">,
    method: string,
    path: string,
    opts: { body?: unknown; contentType?: string } = {},
  ): Promise<Answer> {
    const id = this.nextId++;
    const sentAt = Date.now();
    const answer = await request(conn, method, path, opts);
    this.ops.push({ id, ...entry, sentAt, answeredAt: Date.now(), status: answer.status, message: answer.message });
    return answer;
  }
}

export interface WorkloadOptions {
  conn: ShardConn; // the front-proxy with the admin identity
  consumers: Consumer[];
  vars: Record<string, string>;
  log: OpLog;
  rng: Rng;
  signal: AbortSignal;
  /** Workspaces no worker may use any more (being deleted). */
  retired: Set<string>;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

export { sleep };

const wsPath = (c: Consumer): string => `/clusters/${c.path}`;

/** One worker: a random operation, a short pause, again, until the signal. */
export async function worker(name: string, o: WorkloadOptions): Promise<void> {
  const rng = o.rng;
  while (!o.signal.aborted) {
    const live = o.consumers.filter((c) => !o.retired.has(c.path));
    if (live.length === 0) return;
    const c = rng.pick(live);
    const ns = rng.pick(NAMESPACES);
    await step(name, o, c, ns);
    await sleep(rng.int(20, 250), o.signal);
  }
}

async function step(worker: string, o: WorkloadOptions, c: Consumer, ns: string): Promise<void> {
  const { rng, log, conn } = o;
  const base = { worker, cluster: c.cluster, workspace: c.path };
  const dep = rng.pick(["vpc", "vpc", "subnet", "subnet", "zone"] as const);
  const depKind = KINDS[dep];
  const depNs = depKind.namespaced ? ns : "";
  const depName = `${dep}-${rng.int(0, POOL[dep] - 1)}`;
  const p = rng.next();
  let answer: Answer | undefined;
  if (p < 0.22) {
    answer = await log.send(
      conn,
      { ...base, kind: "create", resource: depKind.resource, namespace: depNs, name: depName },
      "POST",
      `${wsPath(c)}${collection(depKind, ns)}`,
      { body: { apiVersion: depKind.apiVersion, kind: depKind.kind, metadata: { name: depName }, spec: {} } },
    );
  } else if (p < 0.5) {
    const isVm = rng.chance(0.5);
    const k = isVm ? KINDS.vm : KINDS.server;
    const name = `${isVm ? "vm" : "server"}-${rng.int(0, (isVm ? POOL.vm : POOL.server) - 1)}`;
    const spec = isVm ? vmSpec(rng) : serverSpec(rng);
    answer = await log.send(
      conn,
      { ...base, kind: "update", resource: k.resource, namespace: ns, name },
      "PATCH",
      `${wsPath(c)}${collection(k, ns)}/${name}?fieldManager=soak&force=true`,
      {
        body: { apiVersion: k.apiVersion, kind: k.kind, metadata: { name, namespace: ns }, spec },
        contentType: "application/apply-patch+yaml",
      },
    );
    const last = log.ops.at(-1);
    if (last && answer.status === 201) last.kind = "create";
  } else if (p < 0.72) {
    const dryRun = rng.chance(0.25);
    answer = await log.send(
      conn,
      {
        ...base,
        kind: dryRun ? "delete-dry-run" : "delete",
        resource: depKind.resource,
        namespace: depNs,
        name: depName,
      },
      "DELETE",
      `${wsPath(c)}${collection(depKind, ns)}/${depName}${dryRun ? "?dryRun=All" : ""}`,
    );
  } else if (p < 0.86) {
    const isVm = rng.chance(0.5);
    const k = isVm ? KINDS.vm : KINDS.server;
    const name = `${isVm ? "vm" : "server"}-${rng.int(0, (isVm ? POOL.vm : POOL.server) - 1)}`;
    answer = await log.send(
      conn,
      { ...base, kind: "delete", resource: k.resource, namespace: ns, name },
      "DELETE",
      `${wsPath(c)}${collection(k, ns)}/${name}`,
    );
  } else if (p < 0.9) {
    const k = rng.pick([KINDS.vpc, KINDS.subnet, KINDS.server, KINDS.vm]);
    answer = await log.send(
      conn,
      { ...base, kind: "delete-collection", resource: k.resource, namespace: ns, name: "" },
      "DELETE",
      `${wsPath(c)}${collection(k, ns)}`,
    );
  } else if (p < 0.95) {
    const on = rng.chance(0.5);
    answer = await log.send(
      conn,
      { ...base, kind: "annotate-skip", resource: depKind.resource, namespace: depNs, name: depName },
      "PATCH",
      `${wsPath(c)}${collection(depKind, ns)}/${depName}`,
      {
        body: { metadata: { annotations: { [SKIP]: on ? "true" : null } } },
        contentType: "application/merge-patch+json",
      },
    );
  } else if (p < 0.955 && DELETABLE_NAMESPACES.includes(ns)) {
    answer = await log.send(
      conn,
      { ...base, kind: "delete-namespace", resource: "namespaces", namespace: "", name: ns },
      "DELETE",
      `${wsPath(c)}/api/v1/namespaces/${ns}`,
    );
  }
  if (answer && needsNamespace(answer)) {
    await log.send(
      conn,
      { ...base, kind: "create-namespace", resource: "namespaces", namespace: "", name: ns },
      "POST",
      `${wsPath(c)}/api/v1/namespaces`,
      { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } } },
    );
  }
}

function needsNamespace(a: Answer): boolean {
  return a.status === 404 && /namespaces? "?[\w-]+"? not found/.test(a.message);
}

function vmSpec(rng: Rng): Record<string, unknown> {
  return {
    cpu: rng.int(1, 4),
    ...(rng.chance(0.85) ? { vpcRef: { name: `vpc-${rng.int(0, POOL.vpc - 1)}` } } : {}),
    ...(rng.chance(0.6) ? { subnetRef: { name: `subnet-${rng.int(0, POOL.subnet - 1)}` } } : {}),
  };
}

function serverSpec(rng: Rng): Record<string, unknown> {
  const nics = Array.from({ length: rng.int(0, 3) }, () => ({
    subnetRef: { name: `subnet-${rng.int(0, POOL.subnet - 1)}` },
  }));
  return {
    ...(rng.chance(0.7) ? { zoneRef: { name: `zone-${rng.int(0, POOL.zone - 1)}` } } : {}),
    ...(rng.chance(0.7) ? { vpcRef: { name: `vpc-${rng.int(0, POOL.vpc - 1)}` } } : {}),
    ...(rng.chance(0.3) ? { subnetRef: { name: `subnet-${rng.int(0, POOL.subnet - 1)}` } } : {}),
    nics,
  };
}

/** Rule churn on the soak provider's rule: drop or add the zone, change the subnet path, delete and recreate. */
export async function ruleChurner(o: WorkloadOptions, everyMs: [number, number]): Promise<void> {
  const { rng, log, conn } = o;
  const rules = `/clusters/${SOAK_PROVIDER}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
  const base = { worker: "rules", cluster: "", workspace: SOAK_PROVIDER, resource: "dependencyrules", namespace: "" };
  const applyShape = (shape: ServerRuleShape): Promise<Answer> =>
    log.send(
      conn,
      { ...base, kind: "rule-churn", name: `${SOAK_RULE}:${shape}` },
      "PATCH",
      `${rules}/${SOAK_RULE}?fieldManager=soak&force=true`,
      {
        body: serverRule(o.vars, shape),
        contentType: "application/apply-patch+yaml",
      },
    );
  while (!o.signal.aborted) {
    await sleep(rng.int(...everyMs), o.signal);
    if (o.signal.aborted) break;
    const action = rng.pick(["no-zone", "single-subnet", "full", "recreate"] as const);
    if (action === "recreate") {
      await log.send(
        conn,
        { ...base, kind: "rule-churn", name: `${SOAK_RULE}:delete` },
        "DELETE",
        `${rules}/${SOAK_RULE}`,
      );
      await sleep(rng.int(2000, 6000), o.signal);
      await applyShape("full");
    } else {
      await applyShape(action);
    }
  }
  await applyShape("full"); // leave the rule whole for the drain
}

/** Deletes one consumer workspace part-way through; workers stop using it first. */
export async function deleteWorkspaceLater(o: WorkloadOptions, c: Consumer, afterMs: number): Promise<void> {
  await sleep(afterMs, o.signal);
  if (o.signal.aborted) return;
  o.retired.add(c.path);
  await sleep(1000);
  const name = c.path.split(":").at(-1) ?? "";
  await o.log.send(
    o.conn,
    {
      worker: "workspaces",
      kind: "delete-workspace",
      cluster: c.cluster,
      workspace: c.path,
      resource: "workspaces",
      namespace: "",
      name,
    },
    "DELETE",
    `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`,
  );
}

export type { OpKind };
