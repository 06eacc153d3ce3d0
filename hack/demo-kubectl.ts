// The demo's walkthrough shows each step as the kubectl command a user would type and what kubectl prints for it,
// while the requests go through the project's own kcp client: the demo needs no kubectl, and shows the same answers.
import { isApiError, type RestClient } from "../src/kcp/rest.ts";
import { waitFor } from "../tools/kcp/process.ts";

/** A resource as kubectl names it: `vpc` → vpcs.network.test.io, and the printer columns its schema declares. */
export interface Resource {
  plural: string;
  singular: string;
  group: string;
  version: string;
  namespaced: boolean;
  /** Extra columns between NAME and AGE: header and how to read the cell. */
  columns?: { header: string; cell: (o: KubeObject) => string }[];
}

interface KubeObject {
  metadata: { name: string; creationTimestamp?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** A scalar cell as kubectl prints it; empty when the field is unset. */
const text = (v: unknown): string => (typeof v === "string" || typeof v === "number" ? String(v) : "");

/** The status of condition `type` of an object, "" while it has none. */
const conditionStatus = (o: KubeObject, type: string): string =>
  ((o.status?.["conditions"] as { type: string; status: string }[] | undefined) ?? []).find((c) => c.type === type)
    ?.status ?? "";

export const RESOURCES = {
  vpc: { plural: "vpcs", singular: "vpc", group: "network.test.io", version: "v1", namespaced: true },
  virtualmachine: {
    plural: "virtualmachines",
    singular: "virtualmachine",
    group: "compute.test.io",
    version: "v1",
    namespaced: true,
  },
  // The DependencyRule's additionalPrinterColumns (deploy/kcp/apiresourceschema.yaml).
  dependencyrule: {
    plural: "dependencyrules",
    singular: "dependencyrule",
    group: "dependencies.opendefense.cloud",
    version: "v1alpha1",
    namespaced: false,
    columns: [
      {
        header: "DEPENDENT",
        cell: (o) => String((o.spec?.["dependent"] as { kind?: string } | undefined)?.kind ?? ""),
      },
      { header: "ENFORCEMENT", cell: (o) => text(o.spec?.["enforcement"]) },
      { header: "DEPENDENCIES", cell: (o) => text(o.status?.["dependencyCount"]) },
      { header: "READY", cell: (o) => conditionStatus(o, "Ready") },
    ],
  },
} as const satisfies Record<string, Resource>;

const info = (s: string): void => console.log(`    ${s}`);

const collection = (r: Resource): string =>
  `/apis/${r.group}/${r.version}${r.namespaced ? "/namespaces/default" : ""}/${r.plural}`;

/** kubectl's AGE: seconds below two minutes, then minutes and seconds below ten, then minutes, hours, days. */
function age(created: string | undefined, now = Date.now()): string {
  if (!created) return "<unknown>";
  const s = Math.max(0, Math.floor((now - Date.parse(created)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h}h` : `${Math.floor(h / 24)}d`;
}

/** Columns padded to the widest cell plus three spaces, as kubectl's table printer does. */
function table(rows: string[][]): string[] {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd((widths[i] ?? 0) + 3) : c)).join(""));
}

/** `kubectl --context=<context> get <a>,<b>`: one table per resource, names qualified when there are several. */
export async function get(ws: RestClient, context: string, resources: Resource[]): Promise<void> {
  console.log(`    $ kubectl --context=${context} get ${resources.map((r) => r.plural).join(",")}`);
  for (const [i, r] of resources.entries()) {
    const list = await ws.get<{ items: KubeObject[] }>(collection(r));
    const name = (o: KubeObject): string =>
      resources.length > 1 ? `${r.singular}.${r.group}/${o.metadata.name}` : o.metadata.name;
    const columns = "columns" in r ? (r.columns ?? []) : [];
    const rows = [
      ["NAME", ...columns.map((c) => c.header), "AGE"],
      ...list.items.map((o) => [name(o), ...columns.map((c) => c.cell(o)), age(o.metadata.creationTimestamp)]),
    ];
    if (i > 0) info("");
    for (const line of table(rows)) info(line);
  }
}

/**
 * `kubectl --context=<context> wait --for=condition=<type> <singular>/<name>`: waits, as kubectl does, until the
 * condition is True (kubectl's default timeout is 30 s; a loaded machine gets longer).
 */
export async function wait(ws: RestClient, context: string, r: Resource, name: string, type: string): Promise<void> {
  console.log(`    $ kubectl --context=${context} wait --for=condition=${type} ${r.singular}/${name}`);
  await waitFor(
    `${r.singular}/${name} to be ${type}`,
    async () => conditionStatus(await ws.get<KubeObject>(`${collection(r)}/${name}`), type) === "True" || undefined,
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  info(`${r.singular}.${r.group}/${name} condition met`);
}

/** `kubectl --context=<context> delete <singular> <name>`; returns whether it was deleted. */
export async function del(ws: RestClient, context: string, r: Resource, name: string): Promise<boolean> {
  console.log(`    $ kubectl --context=${context} delete ${r.singular} ${name}`);
  try {
    await ws.request("DELETE", `${collection(r)}/${name}`);
    info(`${r.singular}.${r.group} "${name}" deleted`);
    return true;
  } catch (err) {
    if (!isApiError(err)) throw err;
    info(`Error from server (${err.reason}): ${err.statusMessage}`);
    return false;
  }
}
