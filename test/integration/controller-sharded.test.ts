// The controller on a two-shard kcp: the dep-ctrl export then has one virtual workspace endpoint per shard with
// bindings, and each endpoint serves only its own shard's workspaces. A provider on each shard must get its webhook
// configuration through the right endpoint, and lose it again when no rule wants it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { apply, createWorkspace, waitForBinding } from "../../tools/kcp/api.ts";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { shardedKcpSuite } from "../../tools/kcp/sharded.ts";
import { rule } from "./controller-fixtures.ts";
import { depCtrlBinding, EXPORT_NAME, IDENTITIES, PATHS, setupTopology, TOKENS } from "../../tools/kcp/topology.ts";
import { run } from "../../src/cmd/controller.ts";
import type { ValidatingWebhookConfiguration } from "../../src/controller/desired.ts";
import { DEPENDENCY_RULES_PATH as RULES_PATH, WEBHOOK_CONFIGURATIONS_PATH as VWC_PATH } from "../../src/api/wire.ts";
import { endpointUrls, ENDPOINT_SLICES_PATH, type APIExportEndpointSlice } from "../../src/kcp/virtualworkspace.ts";
import { createLogger } from "../../src/observability/logger.ts";

const env = shardedKcpSuite({ tokens: TOKENS });
const FAR = { root: "root:net-on-root", "shard-1": "root:net-on-shard-1" } as const;

describe("dependency controller on a two-shard kcp", () => {
  const stop = new AbortController();
  let done: Promise<number> | undefined;
  let errors = "";
  const clusters: Record<string, string> = {};

  before(async () => {
    const { kcp } = env;
    await setupTopology(kcp);
    // One network provider pinned to each shard, both binding the dep-ctrl export.
    for (const [shard, p] of Object.entries(FAR)) {
      clusters[p] = await createWorkspace(kcp.admin, p, { shard });
      await apply(kcp.ws(p), readFileSync(path.join(REPO_ROOT, "test/fixtures/network-provider.yaml"), "utf8"));
      await apply(kcp.ws(p), depCtrlBinding(PATHS.depCtrl));
      await waitForBinding(kcp.ws(p), EXPORT_NAME);
    }
    await waitFor(
      "an endpoint per shard",
      async () => {
        const slices = await kcp.ws(PATHS.depCtrl).listAll<APIExportEndpointSlice>(ENDPOINT_SLICES_PATH);
        return endpointUrls(slices.items, EXPORT_NAME).length === 2 || undefined;
      },
      { timeoutMs: 60_000 },
    );
    const kubeconfig = kcp.kubeconfigFor(IDENTITIES.controller.token, PATHS.depCtrl, "controller-sharded.kubeconfig");
    done = run(
      [
        `--kubeconfig=${kubeconfig}`,
        "--webhook-url=https://127.0.0.1:9443",
        "--health-probe-bind-address=127.0.0.1:0",
        "--resync-period=2s",
      ],
      {
        env: {},
        signal: stop.signal,
        stderr: (s) => (errors += s),
        logger: createLogger("controller-sharded", process.env["IT_LOG_LEVEL"] ?? "warn"),
      },
    );
  });

  after(async () => {
    stop.abort();
    if (done) assert.equal(await done, 0, errors);
  });

  const vwc = (p: string) =>
    env.kcp.ws(p).getOptional<ValidatingWebhookConfiguration>(`${VWC_PATH}/dependency-controller`);

  it("installs the webhook configuration in a provider on each shard", async () => {
    for (const p of Object.values(FAR))
      await apply(env.kcp.ws(PATHS.compute), [rule(`vm-${p.split(":")[1]}`, [{ resource: "vpcs", path: p }])]);
    for (const p of Object.values(FAR)) {
      const c = await waitFor(`${p} has its configuration`, async () => {
        if (errors) throw new Error(errors);
        return vwc(p);
      });
      assert.equal(c.webhooks?.[0]?.clientConfig.url, `https://127.0.0.1:9443/validate/${clusters[p]}`);
    }
  });

  it("removes them when the rules go", async () => {
    for (const p of Object.values(FAR))
      await env.kcp.ws(PATHS.compute).request("DELETE", `${RULES_PATH}/vm-${p.split(":")[1]}`);
    for (const p of Object.values(FAR))
      await waitFor(`${p} configuration removed`, async () => (await vwc(p)) === undefined || undefined);
  });
});
