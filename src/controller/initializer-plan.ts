// The provider workspace initializer's decisions, pure: from what a new workspace of the provider WorkspaceType holds
// (its dep-ctrl APIBinding, the index consent) to the writes it still lacks, and whether the initializer may go.
// src/controller/initializer.ts observes and writes; nothing here does I/O.
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { EXPORT_READ_CLAIMS, VWC_PERMISSION_CLAIM } from "../api/manifests.ts";

/** The ClusterRole and ClusterRoleBinding the initializer writes: deploy/rbac/provider-index.yaml for every export. */
export const INDEX_CONSENT_NAME = "kcp-dependency-webhook-index";

const RBAC = "/apis/rbac.authorization.k8s.io/v1";
export const APIBINDINGS_PATH = "/apis/apis.kcp.io/v1alpha2/apibindings";
export const CONSENT_ROLE_PATH = `${RBAC}/clusterroles/${INDEX_CONSENT_NAME}`;
export const CONSENT_BINDING_PATH = `${RBAC}/clusterrolebindings/${INDEX_CONSENT_NAME}`;

type Manifest = Record<string, unknown>;

/**
 * The index consent's rules (deploy/rbac/provider-index.yaml): the export's content read through its virtual
 * workspace, its endpoint slices listed and watched, and `access`. With `exportName` it is the file's content for that
 * one export; without, it covers every APIExport of the workspace, which is what a workspace made a provider by its
 * type consents to (at creation it has no export yet, and each export it adds is its own).
 */
export function indexConsentRules(exportName?: string): Manifest[] {
  return [
    { apiGroups: ["apis.kcp.io"], resources: ["apiexportendpointslices"], verbs: ["list", "watch"] },
    {
      apiGroups: ["apis.kcp.io"],
      resources: ["apiexports/content"],
      ...(exportName !== undefined ? { resourceNames: [exportName] } : {}),
      verbs: ["get", "list", "watch"],
    },
    { nonResourceURLs: ["/"], verbs: ["access"] },
  ];
}

export function indexConsentRole(): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: INDEX_CONSENT_NAME },
    rules: indexConsentRules(),
  };
}

export function indexConsentBinding(webhookUser: string): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: INDEX_CONSENT_NAME },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: INDEX_CONSENT_NAME },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: webhookUser }],
  };
}

/** Base 62 in Go's big.Int.Text(62) digits (0-9, a-z, A-Z), most significant first, no leading zeros. */
function base62(bytes: Buffer): string {
  const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  let n = BigInt(`0x${bytes.toString("hex")}`);
  if (n === 0n) return "0";
  let out = "";
  while (n > 0n) {
    out = digits[Number(n % 62n)]! + out;
    n /= 62n;
  }
  return out;
}

/**
 * The name kcp v0.30.0's default-APIBinding initializer gives the binding of `export` at `exportPath` in `cluster`
 * (pkg/reconciler/tenancy/initialization, generateAPIBindingName). Creating ours under the same name means that
 * whichever initializer comes first, the other finds it and does not add a second binding of the same export.
 */
export function defaultBindingName(cluster: string, exportPath: string, exportName: string): string {
  const hash = base62(createHash("sha224").update(`${cluster}|${exportPath}|${exportName}`).digest());
  return `${exportName.slice(0, 253 - 1 - 5)}-${hash.slice(0, 5).toLowerCase()}`;
}

export interface Claim {
  group: string;
  resource: string;
  verbs: string[];
  identityHash?: string;
}

interface AcceptableClaim extends Claim {
  selector?: { matchAll?: boolean } & Record<string, unknown>;
  state?: string;
}

export interface ObservedBinding {
  metadata: { name: string; resourceVersion?: string } & Record<string, unknown>;
  spec?: { reference?: { export?: { path?: string; name?: string } }; permissionClaims?: AcceptableClaim[] };
  status?: { phase?: string };
}

/** What the initializer found in one initializing workspace. */
export interface WorkspaceFacts {
  cluster: string;
  bindings: ObservedBinding[];
  consentRole?: Manifest & { metadata: { resourceVersion?: string } };
  consentBinding?: Manifest & { metadata: { resourceVersion?: string } };
}

/** What every provider workspace must end up with. */
export interface InitializerTarget {
  depCtrlPath: string;
  exportName: string;
  webhookUser: string;
}

export interface Write {
  method: "POST" | "PUT";
  path: string;
  body: Manifest;
  /** One line for the log: which step this is. */
  why: string;
}

export type Plan =
  | { kind: "write"; writes: Write[] }
  /** Everything is written; kcp has not bound the export yet, so the workspace would not serve rules. */
  | { kind: "wait"; reason: string }
  /** Nothing lacks: remove the initializer. */
  | { kind: "release" };

/** The dep-ctrl export's claims, each accepted for every object (what docs/getting-started.md step 4 applies). */
export function acceptedClaims(): AcceptableClaim[] {
  return [VWC_PERMISSION_CLAIM, ...EXPORT_READ_CLAIMS].map((c) => ({
    group: c.group,
    resource: c.resource,
    verbs: [...c.verbs],
    selector: { matchAll: true },
    state: "Accepted",
  }));
}

const sameClaim = (a: Claim, b: Claim): boolean => a.group === b.group && a.resource === b.resource;

function accepts(have: AcceptableClaim | undefined, want: AcceptableClaim): boolean {
  if (!have || have.state !== "Accepted" || have.selector?.matchAll !== true) return false;
  return want.verbs.every((v) => have.verbs.includes(v) || have.verbs.includes("*"));
}

/** The binding of the dep-ctrl export, by the export it names (kcp's default binding or one made by hand). */
export function depCtrlBinding(bindings: ObservedBinding[], t: InitializerTarget): ObservedBinding | undefined {
  return bindings.find((b) => {
    const ref = b.spec?.reference?.export;
    return ref?.name === t.exportName && (ref.path ?? "") === t.depCtrlPath;
  });
}

function bindingWrites(facts: WorkspaceFacts, t: InitializerTarget): Write[] {
  const want = acceptedClaims();
  const existing = depCtrlBinding(facts.bindings, t);
  if (!existing) {
    const name = defaultBindingName(facts.cluster, t.depCtrlPath, t.exportName);
    const body = {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIBinding",
      metadata: { name },
      spec: { reference: { export: { path: t.depCtrlPath, name: t.exportName } }, permissionClaims: want },
    };
    return [{ method: "POST", path: APIBINDINGS_PATH, body, why: `create APIBinding ${name}, every claim accepted` }];
  }
  const have = existing.spec?.permissionClaims ?? [];
  if (
    want.every((w) =>
      accepts(
        have.find((h) => sameClaim(h, w)),
        w,
      ),
    )
  )
    return [];
  // Keep claims of other resources as their owner wrote them; replace ours with the accepted form.
  const others = have.filter((h) => !want.some((w) => sameClaim(h, w)));
  const body = { ...existing, spec: { ...existing.spec, permissionClaims: [...others, ...want] } };
  delete (body as { status?: unknown }).status;
  const name = existing.metadata.name;
  return [
    { method: "PUT", path: `${APIBINDINGS_PATH}/${name}`, body, why: `accept every claim of APIBinding ${name}` },
  ];
}

/** Create what is missing; put back what differs in the fields that grant (rules, roleRef, subjects). */
function ensure(observed: WorkspaceFacts["consentRole"], want: Manifest, path: string, fields: string[]): Write[] {
  const kind = String(want["kind"]);
  if (!observed) return [{ method: "POST", path: path.replace(/\/[^/]+$/, ""), body: want, why: `create ${kind}` }];
  if (fields.every((f) => isDeepStrictEqual(observed[f], want[f]))) return [];
  const body = {
    ...want,
    metadata: { ...(want["metadata"] as object), resourceVersion: observed.metadata.resourceVersion },
  };
  return [{ method: "PUT", path, body, why: `update ${kind} to the index consent` }];
}

/**
 * What one initializing workspace still needs, in order: the dep-ctrl binding with every claim accepted and the index
 * consent; once both are there and the binding is Bound, the initializer goes. Each call is answered from the facts
 * alone, so a pass after a crash picks up wherever the last one stopped and a repeated pass writes nothing twice.
 */
export function planInitialization(facts: WorkspaceFacts, t: InitializerTarget): Plan {
  const writes = [
    ...bindingWrites(facts, t),
    ...ensure(facts.consentRole, indexConsentRole(), CONSENT_ROLE_PATH, ["rules"]),
    ...ensure(facts.consentBinding, indexConsentBinding(t.webhookUser), CONSENT_BINDING_PATH, ["roleRef", "subjects"]),
  ];
  if (writes.length > 0) return { kind: "write", writes };
  const phase = depCtrlBinding(facts.bindings, t)?.status?.phase;
  if (phase !== "Bound")
    return { kind: "wait", reason: `APIBinding of ${t.exportName} is ${phase ?? "new"}, not Bound` };
  return { kind: "release" };
}

/** The LogicalCluster's initializers without ours (kcp's initializing virtual workspace accepts only that change). */
export function withoutInitializer(initializers: readonly string[], initializer: string): string[] {
  return initializers.filter((i) => i !== initializer);
}
