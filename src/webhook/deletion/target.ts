// The object a DELETE review names, read and checked: which workspace (the kcp.io/cluster annotation), which
// namespace and name. Everything in a review is the caller's text until checked here.
import { CLUSTER_ANNOTATION, SKIP_PROTECTION_ANNOTATION, type LogicalClusterName } from "../../api/types.ts";
import { isLogicalClusterName } from "../../api/wire.ts";
import { asRecord, nonEmptyString } from "../../util/json.ts";
import { allow, badRequest, type AdmissionRequest, type Decision } from "../admission.ts";

/** The object being deleted. */
export interface Target {
  consumer: LogicalClusterName;
  resource: string;
  name: string;
  /** Set for a namespaced object: only dependents in this namespace can reference it. */
  namespace?: string;
}

/** The object a review names, as the review gives it (unchecked): read once, for the decision and for its log line. */
export interface Named {
  /** Whether the review carries an oldObject at all. */
  present: boolean;
  annotations: Record<string, unknown>;
  /** metadata.name, else the request's name (DELETECOLLECTION sends an empty one per item). */
  name: string | undefined;
  /** metadata.namespace. */
  namespace: string | undefined;
}

export function readNamed(request: AdmissionRequest): Named {
  const old = asRecord(request.oldObject);
  const meta = asRecord(old?.["metadata"]) ?? {};
  return {
    present: old !== undefined,
    annotations: asRecord(meta["annotations"]) ?? {},
    // The object's own name is the truth.
    name: nonEmptyString(meta["name"]) ?? nonEmptyString(request.name),
    namespace: nonEmptyString(meta["namespace"]),
  };
}

/** The object a DELETE names, read from the review; a Decision when the review cannot be trusted or skips. */
export function targetOf(request: AdmissionRequest, named: Named = readNamed(request)): Target | Decision {
  if (!named.present) return badRequest("DELETE request has no oldObject: cannot tell which object is being deleted");
  const { annotations, name } = named;
  // Break-glass: exactly "true"; "false", "True" or "yes" do not skip.
  if (annotations[SKIP_PROTECTION_ANNOTATION] === "true") {
    return allow("skip-protection", [`deletion protection skipped: ${SKIP_PROTECTION_ANNOTATION}=true`]);
  }
  const consumer = annotations[CLUSTER_ANNOTATION];
  if (consumer === undefined || consumer === "") {
    return badRequest(`oldObject has no ${CLUSTER_ANNOTATION} annotation: cannot tell which workspace it is in`);
  }
  if (!isLogicalClusterName(consumer)) {
    return badRequest(`oldObject has an invalid ${CLUSTER_ANNOTATION} annotation ${JSON.stringify(consumer)}`);
  }
  if (name === undefined) return badRequest("neither oldObject.metadata.name nor request.name is set");
  const objectNs = named.namespace;
  const requestNs = nonEmptyString(request.namespace);
  if (objectNs !== undefined && requestNs !== undefined && objectNs !== requestNs) {
    return badRequest(`request namespace "${requestNs}" differs from oldObject namespace "${objectNs}"`);
  }
  const namespace = objectNs ?? requestNs;
  return {
    consumer,
    resource: request.resource.resource,
    name,
    ...(namespace ? { namespace } : {}),
  };
}
