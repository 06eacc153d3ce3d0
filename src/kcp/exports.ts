// Reads a provider's APIExport and the APIResourceSchemas it names, through the dep-ctrl APIExport's virtual
// workspace: the dep-ctrl export claims read-only access to apis.kcp.io apiexports and apiresourceschemas, and a
// provider that accepts those claims in its APIBinding consents to being checked. Verified on kcp v0.30.0: with the
// claims accepted a GET answers 200, or 404 for an export that is not there; without them it answers 403.
import { parseRuleAuthors, type ExportFacts, type ExportedResource, type SchemaSummary } from "../api/references.ts";
import type { LogicalClusterName } from "../api/types.ts";
import { isApiError } from "./rest.ts";

export const APIEXPORTS_PATH = "/apis/apis.kcp.io/v1alpha2/apiexports";
export const APIRESOURCESCHEMAS_PATH = "/apis/apis.kcp.io/v1alpha1/apiresourceschemas";

/** What the fetch needs: a GET through one virtual workspace endpoint, aimed at one logical cluster. */
export type ClusterGet = (endpoint: string, cluster: LogicalClusterName, path: string) => Promise<unknown>;

export interface ExportTarget {
  cluster: LogicalClusterName;
  exportName: string;
  /** The group/resources whose schemas are needed (only those are fetched). */
  resources: readonly { group: string; resource: string }[];
}

export const NO_CONSENT_HINT =
  "not allowed to read it: the workspace's APIBinding to the dep-ctrl export must accept the read-only " +
  "permission claims on apis.kcp.io apiexports and apiresourceschemas (deploy/kcp/apibinding-provider.yaml)";

interface APIExportObject {
  metadata?: { annotations?: Record<string, unknown> };
  spec?: { resources?: { group?: string; name?: string; schema?: string }[] };
}

interface APIResourceSchemaObject {
  spec?: { names?: { kind?: string }; versions?: { name?: string; served?: boolean }[] };
}

type Answer = { status: "ok"; body: unknown } | { status: 403 | 404 } | { status: "error"; message: string };

async function tryEndpoints(get: ClusterGet, endpoints: readonly string[], cluster: LogicalClusterName, path: string) {
  const answers: Answer[] = [];
  for (const endpoint of endpoints) {
    try {
      return { found: { status: "ok", body: await get(endpoint, cluster, path) } as Answer, answers };
    } catch (err) {
      if (isApiError(err, 404)) answers.push({ status: 404 });
      else if (isApiError(err, 403)) answers.push({ status: 403 });
      else answers.push({ status: "error", message: (err as Error).message });
    }
  }
  return { found: undefined, answers };
}

/**
 * Whether the answers say the workspace's owner declined the claims (403). Another shard's endpoint answers 403 for a
 * cluster it does not serve, so a 403 counts only from the endpoint known to serve it, or, when none is known, from a
 * set of endpoints that all answered: one that gave no answer (a stopped shard) may be the one serving it. Declined
 * makes a rule not enforced; a shard that cannot be reached must not (its rule stays enforced, CannotVerify).
 */
function declined(answers: readonly Answer[], firstKnown: boolean): boolean {
  if (firstKnown) return answers[0]?.status === 403;
  return answers.some((a) => a.status === 403) && !answers.some((a) => a.status === "error");
}

/**
 * The facts about one export. `endpoints` are the virtual workspace URLs to try, the one known to serve the cluster
 * first; with `firstKnown` its 404 is taken as the answer (another shard's 403/404 says nothing about the cluster).
 */
export async function fetchExportFacts(
  get: ClusterGet,
  endpoints: readonly string[],
  firstKnown: boolean,
  target: ExportTarget,
): Promise<ExportFacts> {
  if (endpoints.length === 0)
    return { found: false, definite: false, reason: "the dep-ctrl export has no virtual workspace endpoint yet" };
  const { found, answers } = await tryEndpoints(
    get,
    endpoints,
    target.cluster,
    `${APIEXPORTS_PATH}/${target.exportName}`,
  );
  if (!found || found.status !== "ok") {
    const notFound = (firstKnown && answers[0]?.status === 404) || answers.every((a) => a.status === 404);
    if (notFound) return { found: false, definite: true };
    if (declined(answers, firstKnown))
      return { found: false, definite: false, reason: NO_CONSENT_HINT, declined: true };
    const error = answers.find((a): a is Extract<Answer, { status: "error" }> => a.status === "error");
    return { found: false, definite: false, reason: `reading it failed: ${error?.message ?? "no answer"}` };
  }
  const resources: ExportedResource[] = [];
  for (const r of (found.body as APIExportObject).spec?.resources ?? []) {
    if (typeof r.name === "string" && typeof r.schema === "string")
      resources.push({ group: r.group ?? "", name: r.name, schema: r.schema });
  }
  const schemas = new Map<string, SchemaSummary>();
  const wanted = resources.filter((r) => target.resources.some((t) => t.group === r.group && t.resource === r.name));
  for (const r of wanted) {
    const answer = await tryEndpoints(get, endpoints, target.cluster, `${APIRESOURCESCHEMAS_PATH}/${r.schema}`);
    if (answer.found?.status !== "ok") continue;
    const spec = (answer.found.body as APIResourceSchemaObject).spec;
    schemas.set(r.schema, {
      kind: spec?.names?.kind ?? "",
      versions: (spec?.versions ?? []).map((v) => ({ name: v.name ?? "", served: v.served === true })),
    });
  }
  const ruleAuthors = parseRuleAuthors((found.body as APIExportObject).metadata?.annotations);
  return { found: true, resources, schemas, ...(ruleAuthors ? { ruleAuthors } : {}) };
}
