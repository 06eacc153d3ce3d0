// The ground every other test stands on, proved against a real kcp: nested workspaces, an APIExport bound from
// another workspace, and the export's virtual workspace serving objects across workspaces with kcp.io/cluster.
import assert from "node:assert/strict";
import { test } from "node:test";
import { apply, createWorkspace, logicalClusterOf, waitForBinding } from "../../tools/kcp/api.ts";
import { kcpSuite } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { endpointUrls, ENDPOINT_SLICES_PATH, type APIExportEndpointSlice } from "../../src/kcp/virtualworkspace.ts";

const env = kcpSuite();

test("creates root:org:team and reads its logical cluster name", async () => {
  const cluster = await createWorkspace(env.kcp.admin, "root:org:team");
  assert.match(cluster, /^[a-z0-9]+$/);
  assert.equal(await logicalClusterOf(env.kcp.admin, "root:org:team"), cluster);
  // The logical cluster name addresses the same workspace as its path.
  const byName = await env.kcp
    .ws(cluster)
    .get<{ metadata: { name: string } }>("/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
  assert.equal(byName.metadata.name, "cluster");
});

const WIDGETS = `
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata:
  name: v1.widgets.example.test
spec:
  group: example.test
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {type: integer}
---
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata:
  name: example.test
spec:
  resources:
  - {group: example.test, name: widgets, schema: v1.widgets.example.test, storage: {crd: {}}}
`;

test("an APIExport bound from another workspace serves objects through its virtual workspace", async () => {
  const { kcp } = env;
  await createWorkspace(kcp.admin, "root:widget-provider");
  const consumerCluster = await createWorkspace(kcp.admin, "root:widget-consumer");
  await apply(kcp.ws("root:widget-provider"), WIDGETS);
  await apply(
    kcp.ws("root:widget-consumer"),
    `
apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata: {name: example.test}
spec:
  reference: {export: {path: "root:widget-provider", name: example.test}}
`,
  );
  await waitForBinding(kcp.ws("root:widget-consumer"), "example.test");
  await apply(kcp.ws("root:widget-consumer"), [
    {
      apiVersion: "example.test/v1",
      kind: "Widget",
      metadata: { name: "w1", namespace: "default" },
      spec: { size: 3 },
    },
  ]);

  const urls = await waitFor("endpoint slice URL", async () => {
    const slices = await kcp.ws("root:widget-provider").listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
    const u = endpointUrls(slices.items, "example.test");
    return u.length ? u : undefined;
  });
  assert.equal(urls.length, 1);
  assert.match(urls[0] ?? "", /\/services\/apiexport\/[a-z0-9]+\/example\.test$/);

  const list = await kcp.admin
    .withBase(urls[0] ?? "")
    .listAll<{ metadata: { name: string; annotations?: Record<string, string> } }>(
      "/clusters/*/apis/example.test/v1/widgets",
    );
  const w1 = list.items.find((i) => i.metadata.name === "w1");
  assert.ok(w1, "w1 listed through the virtual workspace");
  assert.equal(w1.metadata.annotations?.["kcp.io/cluster"], consumerCluster);
});
