// fetchExportFacts across shards: which answers mean "the workspace's owner declined the read-only claims". A rule
// whose own workspace declined is not enforced, so a stopped shard (no answer) beside another shard's 403 (it does not
// serve the cluster) must read as "could not check", never as declined: that is what kept a rule on a stopped shard-1
// enforced (multishard e2e, "shard-1 stopped").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fetchExportFacts, NO_CONSENT_HINT, type ClusterGet } from "../../src/kcp/exports.ts";
import { ApiError } from "../../src/kcp/rest.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";

const SHARD0 = "https://127.0.0.1:6444/services/apiexport/x/dependencies.opendefense.cloud";
const SHARD1 = "https://127.0.0.1:6445/services/apiexport/x/dependencies.opendefense.cloud";
const CLUSTER = "n03cjkeamnk5t5co" as LogicalClusterName;
const TARGET = {
  cluster: CLUSTER,
  exportName: "edge.test.io",
  resources: [{ group: "edge.test.io", resource: "gateways" }],
};

type Answer = 403 | 404 | "timeout";

/** Each endpoint answers the APIExport GET as told; the paths it was asked are counted. */
function shards(answers: Record<string, Answer>): { get: ClusterGet; asked: string[] } {
  const asked: string[] = [];
  const get: ClusterGet = (endpoint, cluster, path) => {
    asked.push(endpoint);
    const a = answers[endpoint];
    if (a === "timeout") return Promise.reject(new Error(`GET ${endpoint}/clusters/${cluster}${path}: no answer`));
    const status = a ?? 404;
    const reason = status === 403 ? "Forbidden" : "NotFound";
    return Promise.reject(new ApiError("GET", `${endpoint}/clusters/${cluster}${path}`, status, reason, reason));
  };
  return { get, asked };
}

describe("fetchExportFacts: declined", () => {
  it("the shard known to serve the cluster does not answer, another shard says 403: not declined", async () => {
    const { get, asked } = shards({ [SHARD1]: "timeout", [SHARD0]: 403 });
    const facts = await fetchExportFacts(get, [SHARD1, SHARD0], true, TARGET);
    assert.deepEqual(asked, [SHARD1, SHARD0]);
    assert.equal(facts.found, false);
    assert.ok(!facts.found && !facts.definite);
    assert.equal(facts.declined, undefined);
    assert.match(facts.reason, /^reading it failed: GET https:\/\/127\.0\.0\.1:6445.*no answer$/);
  });

  it("no shard known, one does not answer, another says 403: not declined", async () => {
    const { get } = shards({ [SHARD1]: "timeout", [SHARD0]: 403 });
    const facts = await fetchExportFacts(get, [SHARD0, SHARD1], false, TARGET);
    assert.ok(!facts.found && !facts.definite);
    assert.equal(facts.declined, undefined);
    assert.match(facts.reason, /^reading it failed/);
  });

  it("the shard known to serve the cluster says 403: declined", async () => {
    const { get } = shards({ [SHARD1]: 403, [SHARD0]: 403 });
    const facts = await fetchExportFacts(get, [SHARD1, SHARD0], true, TARGET);
    assert.deepEqual(facts, { found: false, definite: false, reason: NO_CONSENT_HINT, declined: true });
  });

  it("the known shard says 403 while another does not answer: declined (the known shard's answer counts)", async () => {
    const { get } = shards({ [SHARD1]: 403, [SHARD0]: "timeout" });
    const facts = await fetchExportFacts(get, [SHARD1, SHARD0], true, TARGET);
    assert.deepEqual(facts, { found: false, definite: false, reason: NO_CONSENT_HINT, declined: true });
  });

  it("no shard known, every shard answers and one says 403: declined", async () => {
    const { get } = shards({ [SHARD1]: 403, [SHARD0]: 404 });
    const facts = await fetchExportFacts(get, [SHARD0, SHARD1], false, TARGET);
    assert.deepEqual(facts, { found: false, definite: false, reason: NO_CONSENT_HINT, declined: true });
  });

  it("the known shard says 404: not found, whatever another shard says", async () => {
    const { get } = shards({ [SHARD1]: 404, [SHARD0]: 403 });
    assert.deepEqual(await fetchExportFacts(get, [SHARD1, SHARD0], true, TARGET), { found: false, definite: true });
  });
});
