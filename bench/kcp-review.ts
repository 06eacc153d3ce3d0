// An AdmissionReview for the DELETE of a namespaced VPC, shaped as kcp v0.30.0 sends one (the upstream builder:
// /work/shared/reference/kcp.md, "AdmissionReview v1 contents"): kind, resource and their request* twins, userInfo with
// groups and extra, object null, oldObject the stored object (managedFields of a kubectl create, the kcp.io/cluster
// annotation naming the consumer workspace), dryRun, and the DeleteOptions. About 2 KiB, as the bench's VPCs are.

const GVR = { group: "network.example.io", version: "v1", resource: "vpcs" };
const GVK = { group: "network.example.io", version: "v1", kind: "VPC" };

/** The stored VPC `name` of `consumer`, as kcp serves it to admission. */
function storedVpc(name: string, consumer: string): Record<string, unknown> {
  return {
    apiVersion: "network.example.io/v1",
    kind: "VPC",
    metadata: {
      name,
      namespace: "default",
      uid: "6f1c2a2e-5b8e-4d43-9a57-3c1f1b0d2e11",
      resourceVersion: "48213",
      generation: 1,
      creationTimestamp: "2026-11-27T10:41:12Z",
      annotations: { "kcp.io/cluster": consumer },
      managedFields: [
        {
          manager: "kubectl-create",
          operation: "Update",
          apiVersion: "network.example.io/v1",
          time: "2026-11-27T10:41:12Z",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:spec": { ".": {}, "f:cidr": {}, "f:region": {} } },
        },
      ],
    },
    spec: { cidr: "10.0.0.0/16", region: "eu-west-1" },
  };
}

/** The review kcp sends for the DELETE of VPC `name` in `consumer`'s namespace default. */
export function kcpReview(uid: string, name: string, consumer = "consumer1"): Record<string, unknown> {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
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
        username: "system:serviceaccount:default:bench-consumer",
        uid: "0b7d3c6e-2f4a-4c1e-8d0b-7a9e5f3c2b10",
        groups: ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
        extra: {
          "authentication.kubernetes.io/cluster-name": [consumer],
          "authentication.kubernetes.io/credential-id": ["JTI=4f0b8a52-6c1d-4e7f-9a3b-2d5c8e1f0a67"],
        },
      },
      object: null,
      oldObject: storedVpc(name, consumer),
      dryRun: false,
      options: { apiVersion: "meta.k8s.io/v1", kind: "DeleteOptions", propagationPolicy: "Background" },
    },
  };
}
