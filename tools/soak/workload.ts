// The seeded workload: concurrent workers that create, update and delete dependencies (VPCs, subnets, cluster-scoped
// zones, and Secrets of the consumer workspace itself) and dependents (VMs with single references, servers with `[*]`
// subnet lists, Endpoints naming a Secret through the local-target rule, references changing on update),
// DELETECOLLECTION and dry-run deletes, namespace deletions, the skip-protection annotation now and then, and rule
// churn. Every request is logged with its sent and answered times, its status and kcp's message.
import { type Consumer } from "./env.ts";
import type { Answer } from "./kube.ts";
import { DELETABLE_NAMESPACES, KINDS, NAMESPACES, POOL, collection, type Kind } from "./kinds.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";
import type { Rng } from "./rng.ts";

export const SKIP = "dependencies.opendefense.cloud/skip-protection";

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

/** One operation's context: who sends it where, and the dependency it drew (most operations act on that). */
interface Target {
  o: WorkloadOptions;
  c: Consumer;
  ns: string;
  base: { worker: string; cluster: string; workspace: string };
  depKind: Kind;
  depNs: string;
  depName: string;
}

async function step(worker: string, o: WorkloadOptions, c: Consumer, ns: string): Promise<void> {
  const { rng, log, conn } = o;
  const base = { worker, cluster: c.cluster, workspace: c.path };
  const dep = rng.pick(["vpc", "vpc", "subnet", "subnet", "zone", "secret"] as const);
  const depKind = KINDS[dep];
  const t: Target = { o, c, ns, base, depKind, depNs: depKind.namespaced ? ns : "", depName: "" };
  t.depName = `${dep}-${rng.int(0, POOL[dep] - 1)}`;
  const p = rng.next();
  let answer: Answer | undefined;
  if (p < 0.22) answer = await createDependency(t);
  else if (p < 0.5) answer = await applyDependent(t);
  else if (p < 0.72) answer = await deleteDependency(t);
  else if (p < 0.86) answer = await deleteDependent(t);
  else if (p < 0.9) answer = await deleteCollection(t);
  else if (p < 0.95) answer = await annotateSkip(t);
  else if (p < 0.955 && DELETABLE_NAMESPACES.includes(ns)) answer = await deleteNamespace(t);
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

function createDependency({ o, c, ns, base, depKind, depNs, depName }: Target): Promise<Answer> {
  return o.log.send(
    o.conn,
    { ...base, kind: "create", resource: depKind.resource, namespace: depNs, name: depName },
    "POST",
    `${wsPath(c)}${collection(depKind, ns)}`,
    {
      body: {
        apiVersion: depKind.apiVersion,
        kind: depKind.kind,
        metadata: { name: depName },
        ...(depKind.fresh ?? { spec: {} }),
      },
    },
  );
}

/** The dependent kinds, each with its name pool and how it draws fresh references. */
const DEPENDENTS = [
  { key: "vm", spec: vmSpec },
  { key: "server", spec: serverSpec },
  { key: "endpoint", spec: endpointSpec },
] as const;

/** A dependent drawn from its kind's pool. */
function pickDependent(rng: Rng): { k: Kind; name: string; spec: (rng: Rng) => Record<string, unknown> } {
  const { key, spec } = rng.pick(DEPENDENTS);
  return { k: KINDS[key], name: `${key}-${rng.int(0, POOL[key] - 1)}`, spec };
}

/** A VM, a server or an Endpoint applied with fresh references (server-side apply: created when missing). */
async function applyDependent({ o, c, ns, base }: Target): Promise<Answer> {
  const { rng, log } = o;
  const { k, name, spec: draw } = pickDependent(rng);
  const spec = draw(rng);
  const answer = await log.send(
    o.conn,
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
  return answer;
}

function deleteDependency({ o, c, ns, base, depKind, depNs, depName }: Target): Promise<Answer> {
  const dryRun = o.rng.chance(0.25);
  return o.log.send(
    o.conn,
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
}

function deleteDependent({ o, c, ns, base }: Target): Promise<Answer> {
  const { k, name } = pickDependent(o.rng);
  return o.log.send(
    o.conn,
    { ...base, kind: "delete", resource: k.resource, namespace: ns, name },
    "DELETE",
    `${wsPath(c)}${collection(k, ns)}/${name}`,
  );
}

function deleteCollection({ o, c, ns, base }: Target): Promise<Answer> {
  const k = o.rng.pick([KINDS.vpc, KINDS.subnet, KINDS.server, KINDS.vm, KINDS.secret, KINDS.endpoint]);
  return o.log.send(
    o.conn,
    { ...base, kind: "delete-collection", resource: k.resource, namespace: ns, name: "" },
    "DELETE",
    `${wsPath(c)}${collection(k, ns)}`,
  );
}

function annotateSkip({ o, c, ns, base, depKind, depNs, depName }: Target): Promise<Answer> {
  const on = o.rng.chance(0.5);
  return o.log.send(
    o.conn,
    { ...base, kind: "annotate-skip", resource: depKind.resource, namespace: depNs, name: depName },
    "PATCH",
    `${wsPath(c)}${collection(depKind, ns)}/${depName}`,
    {
      body: { metadata: { annotations: { [SKIP]: on ? "true" : null } } },
      contentType: "application/merge-patch+json",
    },
  );
}

function deleteNamespace({ o, c, ns, base }: Target): Promise<Answer> {
  return o.log.send(
    o.conn,
    { ...base, kind: "delete-namespace", resource: "namespaces", namespace: "", name: ns },
    "DELETE",
    `${wsPath(c)}/api/v1/namespaces/${ns}`,
  );
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

/** An Endpoint names a Secret of its own workspace (tools/soak/local-targets.ts: the rule's `.spec.secretRef.name`). */
function endpointSpec(rng: Rng): Record<string, unknown> {
  return rng.chance(0.85) ? { secretRef: { name: `secret-${rng.int(0, POOL.secret - 1)}` } } : {};
}
