// How a local-targets pass reads an export's consumers (local-targets-sync.ts), against bench/local-targets-kcp.ts's
// consumers: a page at a time, so the controller never parses an export's whole list of bindings or configurations
// at once (read whole, 1,000 consumers grew its RSS by 60 MiB: bench/local-targets-heap.ts), and what a pass keeps
// of a listed configuration still shows every difference to the diff.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { parseRule } from "../../src/api/rule.ts";
import { WEBHOOK_CONFIGURATIONS_PATH } from "../../src/api/wire.ts";
import { LocalTargets } from "../../src/controller/local-targets-sync.ts";
import { createMetrics } from "../../src/controller/metrics.ts";
import { silentLogger } from "../../src/observability/logger.ts";
import { consumersOf, ruleObject } from "../../bench/local-targets.ts";

const DEP_CTRL_VW = "https://kcp.test/services/apiexport/root-depctrl/dependencies.opendefense.cloud";

function world(consumers: number, declined: number) {
  const kcp = consumersOf(consumers, declined);
  const metrics = createMetrics(new Registry());
  const local = new LocalTargets({
    endpoints: () => [DEP_CTRL_VW],
    clientFor: (_endpoint, cluster) => kcp.client(cluster),
    webhookBaseUrl: "https://wh:9443",
    mayWrite: () => true,
    logger: silentLogger(),
    metrics,
  });
  const rules = [0, 1].map((i) => ({ parsed: parseRule(ruleObject(i))! }));
  const sync = () => local.sync({ rules, caBundle: "Q0E=" }, () => false);
  const writes = async () => (await metrics.writes.get()).values.map((v) => `${v.labels.action}=${v.value}`).sort();
  return { kcp, sync, writes };
}

describe("local targets: how a pass reads an export's consumers", () => {
  it("lists bindings and configurations a page at a time, and still sees every consumer", async () => {
    const { kcp, sync } = world(350, 10);
    const coverage = [...(await sync()).values()][0];
    assert.ok(kcp.largestAnswer > 0 && kcp.largestAnswer <= 100, `largest list answer: ${kcp.largestAnswer} items`);
    assert.equal(kcp.count(), 340, "a configuration in every consumer that accepted, on every page");
    assert.equal(coverage?.kind === "read" && coverage.consumers, 350);
    kcp.largestAnswer = 0;
    await sync();
    assert.ok(kcp.largestAnswer <= 100, "the configurations' list is paged too");
  });

  it("updates a configuration that differs from the wanted one, and only that one", async () => {
    const { kcp, sync, writes } = world(20, 0);
    await sync();
    const { cluster, object } = kcp.view().existing[3]!;
    const edited = structuredClone(object);
    edited.webhooks![0]!.clientConfig.url = "https://elsewhere:9443/validate";
    await kcp
      .client(cluster)
      .request("PUT", `${WEBHOOK_CONFIGURATIONS_PATH}/${object.metadata.name}`, { body: edited });
    await sync();
    assert.deepEqual(await writes(), ["create=20", "update=1"]);
    const after = kcp.view().existing.find((e) => e.cluster === cluster)!.object;
    assert.equal(after.webhooks![0]!.clientConfig.url, object.webhooks![0]!.clientConfig.url);
    await sync();
    assert.deepEqual(await writes(), ["create=20", "update=1"], "then a steady state: no write");
  });
});
