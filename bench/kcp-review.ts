// An AdmissionReview for the DELETE of a namespaced VPC, as kcp v0.30.0 sends one: the request `node
// bench/review-cpu-capture.ts` recorded at the webhook's port during the bench's DELETEs (2026-11-28), byte for byte in
// shape and key order, only the group (the rule of review-cpu-server.ts) and the names differ. kcp-admin deletes, as in
// the bench: userInfo has no `extra` (a ServiceAccount's would add its cluster-name and credential-id, about 150
// bytes); `oldObject` is the stored object (the kcp.io/cluster annotation naming the consumer workspace, one
// managedFields entry); DeleteOptions carry no propagationPolicy. About 1.2 KiB, as kcp's were (1,202–1,218 bytes).
// The headers and the path's `?timeout=10s` are in KCP_HEADERS and KCP_QUERY.

/** The VPCs' group in review-cpu-server.ts's rule; the kcp bench's is network.test.io (review-cpu-warm.ts). */
const GROUP = "network.example.io";

/** What kcp's webhook client (client-go's REST client, Go's HTTP/1.1 transport) sends besides Host and the length. */
export const KCP_HEADERS = {
  "user-agent": "kube-apiserver-admission",
  accept: "application/json, */*",
  "content-type": "application/json",
  "accept-encoding": "gzip",
} as const;

/** The query kcp adds to the VWC's URL: the webhook's timeoutSeconds (10 by default). */
export const KCP_QUERY = "?timeout=10s";

/** The stored VPC `name` of `consumer`, as kcp serves it to admission (metadata keys sorted, as stored). */
function storedVpc(name: string, consumer: string, group: string): Record<string, unknown> {
  return {
    apiVersion: `${group}/v1`,
    kind: "VPC",
    metadata: {
      annotations: { "kcp.io/cluster": consumer },
      creationTimestamp: "2026-11-28T13:02:17Z",
      generation: 1,
      managedFields: [
        {
          apiVersion: `${group}/v1`,
          fieldsType: "FieldsV1",
          fieldsV1: { "f:spec": { ".": {}, "f:cidr": {} } },
          manager: "unknown",
          operation: "Update",
          time: "2026-11-28T13:02:17Z",
        },
      ],
      name,
      namespace: "default",
      resourceVersion: "1003",
      uid: "31342d74-619c-4084-b143-4baff55f06df",
    },
    spec: { cidr: "10.0.0.0/16" },
  };
}

/** The review kcp sends for the DELETE of VPC `name` in `consumer`'s namespace default. */
export function kcpReview(uid: string, name: string, consumer = "consumer1", group = GROUP): Record<string, unknown> {
  const GVR = { group, version: "v1", resource: "vpcs" };
  const GVK = { group, version: "v1", kind: "VPC" };
  return {
    kind: "AdmissionReview",
    apiVersion: "admission.k8s.io/v1",
    request: {
      uid,
      kind: GVK,
      resource: GVR,
      requestKind: GVK,
      requestResource: GVR,
      name,
      namespace: "default",
      operation: "DELETE",
      userInfo: {
        username: "kcp-admin",
        uid: "ed0829dd-bcf7-43c1-8daa-4a19b1fad57d",
        groups: ["system:kcp:admin", "system:authenticated"],
      },
      object: null,
      oldObject: storedVpc(name, consumer, group),
      dryRun: false,
      options: { kind: "DeleteOptions", apiVersion: "meta.k8s.io/v1" },
    },
  };
}
