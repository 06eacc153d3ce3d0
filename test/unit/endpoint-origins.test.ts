// The allow-list of virtual-workspace URLs (src/kcp/endpoint-origins.ts): every forged shape a provider tenant could
// write into its own APIExportEndpointSlice's status is refused, with a reason from the fixed set; what kcp writes is
// followed; origins come from the dep-ctrl export's slice and the operator's flag; a slice's spec.export.path counts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkEndpointUrl,
  ENDPOINT_REFUSALS,
  parseOrigin,
  refusalText,
  selectEndpoints,
  VirtualWorkspaceOrigins,
  type APIExportEndpointSlice,
  type EndpointRefusal,
  type SlicePlace,
} from "../../src/kcp/endpoint-origins.ts";

const KCP = "https://kcp.example:6443";
const SHARD = "https://shard-1.example:6444";
const EXP = { cluster: "2x7k9prov", name: "compute.example.io" };
const GENUINE = `${KCP}/services/apiexport/2x7k9prov/compute.example.io`;
const ORIGINS = new Set([KCP, SHARD]);

describe("checkEndpointUrl", () => {
  it("follows the URLs kcp writes, on each known shard origin", () => {
    assert.deepEqual(checkEndpointUrl(GENUINE, EXP, ORIGINS), { url: GENUINE });
    const onShard = `${SHARD}/services/apiexport/2x7k9prov/compute.example.io`;
    assert.deepEqual(checkEndpointUrl(onShard, EXP, ORIGINS), { url: onShard });
  });

  it("connects to the URL rebuilt from the parsed origin, never to the text as written", () => {
    // A default port written out (Go keeps it) and an upper-case host name the same origin.
    const origins = new Set(["https://kcp.example"]);
    assert.deepEqual(
      checkEndpointUrl("https://KCP.example:443/services/apiexport/2x7k9prov/compute.example.io", EXP, origins),
      {
        url: "https://kcp.example/services/apiexport/2x7k9prov/compute.example.io",
      },
    );
  });

  const forged: [string, string, EndpointRefusal][] = [
    ["another host", "https://evil.example:6443/services/apiexport/2x7k9prov/compute.example.io", "unknown-origin"],
    ["another port of the same host", "https://kcp.example:39111/services/apiexport/2x7k9prov/compute.example.io", "unknown-origin"],
    ["loopback", "https://127.0.0.1:6443/services/apiexport/2x7k9prov/compute.example.io", "unknown-origin"],
    ["the issue's example", "http://127.0.0.1:39111/steal", "not-https"],
    ["plain http on kcp itself", "http://kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "not-https"],
    ["another scheme", "file:///etc/passwd", "not-https"],
    ["kcp itself with a query", `${KCP}/services/apiexport/2x7k9prov/compute.example.io?x=/clusters/root/secrets`, "query"],
    ["kcp itself with an empty query", `${GENUINE}?`, "query"],
    ["kcp's own API through a query", `${KCP}/clusters/root/api/v1/secrets?`, "query"],
    ["a fragment", `${GENUINE}#x`, "fragment"],
    ["an empty fragment", `${GENUINE}#`, "fragment"],
    ["user and password", "https://u:p@kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "userinfo"],
    ["a user", "https://admin@kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "userinfo"],
    ["an empty user", "https://@kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "userinfo"],
    ["kcp itself, not a virtual workspace", `${KCP}/clusters/root`, "wrong-path"],
    ["another cluster's export", `${KCP}/services/apiexport/2x7k9other/compute.example.io`, "wrong-path"],
    ["another export's name", `${KCP}/services/apiexport/2x7k9prov/network.example.io`, "wrong-path"],
    ["a trailing slash", `${GENUINE}/`, "wrong-path"],
    ["more path", `${GENUINE}/clusters/root`, "wrong-path"],
    ["a dot segment back into place", `${KCP}/services/apiexport/2x7k9other/../2x7k9prov/compute.example.io`, "wrong-path"],
    ["an encoded dot segment", `${KCP}/services/apiexport/2x7k9other/%2e%2e/2x7k9prov/compute.example.io`, "wrong-path"],
    ["a trailing dot segment", `${GENUINE}/x/..`, "wrong-path"],
    ["an encoded slash", `${KCP}/services/apiexport/2x7k9prov%2Fcompute.example.io`, "wrong-path"],
    ["an encoded letter", `${KCP}/services/apiexport/2x7k9prov/compute.example.i%6F`, "wrong-path"],
    ["a double slash", `${KCP}//services/apiexport/2x7k9prov/compute.example.io`, "wrong-path"],
    ["backslashes", `${KCP}\\services\\apiexport\\2x7k9prov\\compute.example.io`, "wrong-path"],
    ["a newline in the path", `${GENUINE}\n`, "wrong-path"],
    ["a tab in the path", `${KCP}/services/apiexport/2x7k9prov/compute.\texample.io`, "wrong-path"],
    ["leading space", ` ${GENUINE}`, "unparsable"],
    ["not a URL", "kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "unparsable"],
    ["no slashes after the scheme", "https:kcp.example:6443/services/apiexport/2x7k9prov/compute.example.io", "unparsable"],
    ["empty", "", "unparsable"],
  ]; // prettier-ignore
  for (const [what, url, reason] of forged) {
    it(`refuses ${what}`, () => {
      assert.deepEqual(checkEndpointUrl(url, EXP, ORIGINS), { refused: reason });
    });
  }

  it("refuses every URL when no origin is known", () => {
    assert.deepEqual(checkEndpointUrl(GENUINE, EXP, new Set()), { refused: "unknown-origin" });
  });

  it("names the URL (clipped) and the slice in the refusal text", () => {
    assert.equal(
      refusalText("s", "http://127.0.0.1:39111/steal", "not-https"),
      'virtual workspace URL "http://127.0.0.1:39111/steal" of APIExportEndpointSlice s refused: it is not https',
    );
    const long = `${KCP}/${"a".repeat(5000)}`;
    assert.ok(refusalText("s", long, "wrong-path").length < 500);
    for (const reason of ENDPOINT_REFUSALS) assert.doesNotMatch(refusalText("s", "u", reason), /undefined/);
  });
});

describe("parseOrigin (--virtual-workspace-origins)", () => {
  it("takes https origins, normalised", () => {
    assert.equal(parseOrigin("https://Shard-1.example:6444"), "https://shard-1.example:6444");
    assert.equal(parseOrigin("https://shard-1.example:6444/"), "https://shard-1.example:6444");
    assert.equal(parseOrigin("https://shard-1.example:443"), "https://shard-1.example");
    assert.equal(parseOrigin("https://[::1]:6444"), "https://[::1]:6444");
  });

  for (const bad of [
    "http://shard-1.example:6444",
    "shard-1.example:6444",
    "https://shard-1.example:6444/services",
    "https://u@shard-1.example:6444",
    "https://shard-1.example:6444?x",
    "https://shard-1.example:6444#x",
    "https://shard-1.example:99999",
    "https://",
  ]) {
    it(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseOrigin(bad), /is not an https origin/);
    });
  }
});

describe("VirtualWorkspaceOrigins", () => {
  it("honours the configured origins and learns those of the dep-ctrl export's own endpoints, keeping them", () => {
    const origins = new VirtualWorkspaceOrigins([SHARD]);
    assert.deepEqual([...origins.current()], [SHARD]);
    let told = 0;
    const stop = origins.subscribe(() => told++);
    origins.learn([`${KCP}/services/apiexport/2x7k9dep/dependencies.opendefense.cloud`]);
    assert.deepEqual([...origins.current()].sort(), [KCP, SHARD]);
    assert.equal(told, 1);
    origins.learn([`${KCP}/services/apiexport/2x7k9dep/dependencies.opendefense.cloud`]); // nothing new
    origins.learn([]); // a shard that lost its last binding stays known
    assert.equal(told, 1);
    assert.ok(origins.current().has(KCP));
    origins.learn(["http://plain.example:80/x", "https://u:p@evil.example/x", "not a url"]); // none is an origin
    assert.equal(told, 1);
    assert.equal(origins.current().size, 2);
    stop();
    origins.learn(["https://shard-2.example:6446/x"]);
    assert.equal(told, 1, "no longer told once unsubscribed");
  });
});

const slice = (name: string, urls: string[], path?: string, exportName = EXP.name): APIExportEndpointSlice => ({
  metadata: { name },
  spec: { export: { name: exportName, ...(path !== undefined ? { path } : {}) } },
  status: { endpoints: urls.map((url) => ({ url })) },
});

describe("selectEndpoints", () => {
  const places: Record<string, SlicePlace> = { "root:compute": "own", "root:network": "other", "root:new": "pending" };
  const place = (path: string): SlicePlace => places[path] ?? "other";

  it("follows the genuine URLs of the export's own slices, whatever form their path takes", () => {
    const onShard = `${SHARD}/services/apiexport/2x7k9prov/compute.example.io`;
    const sel = selectEndpoints(
      [slice("a", [GENUINE]), slice("b", [onShard, GENUINE], "root:compute"), slice("c", [GENUINE], EXP.cluster)],
      EXP,
      ORIGINS,
      place,
    );
    assert.deepEqual(sel, { urls: [GENUINE, onShard].sort(), refused: [], ignored: [], pending: false });
  });

  it("refuses forged URLs of its own slices, one by one, and still follows the genuine ones", () => {
    const sel = selectEndpoints(
      [slice(EXP.name, [GENUINE, "http://127.0.0.1:39111/steal", `${GENUINE}?x`], "root:compute")],
      EXP,
      ORIGINS,
      place,
    );
    assert.deepEqual(sel.urls, [GENUINE]);
    assert.deepEqual(sel.refused, [
      { slice: EXP.name, url: "http://127.0.0.1:39111/steal", reason: "not-https" },
      { slice: EXP.name, url: `${GENUINE}?x`, reason: "query" },
    ]);
  });

  it("ignores slices of another workspace's export of the same name, and of other exports", () => {
    const other = `${KCP}/services/apiexport/2x7k9net/compute.example.io`;
    const sel = selectEndpoints(
      [slice("theirs", [other], "root:network"), slice("x", ["http://evil/"], undefined, "network.example.io")],
      EXP,
      ORIGINS,
      place,
    );
    assert.deepEqual(sel, { urls: [], refused: [], ignored: ["theirs"], pending: false });
  });

  it("says the endpoint list is not known while a slice's path is being resolved", () => {
    const sel = selectEndpoints([slice("a", [GENUINE]), slice("n", ["http://x/"], "root:new")], EXP, ORIGINS, place);
    assert.deepEqual(sel, { urls: [GENUINE], refused: [], ignored: [], pending: true });
  });

  it("survives a status that is not what kcp writes", () => {
    const odd = {
      metadata: { name: "odd" },
      spec: { export: { name: EXP.name } },
      status: { endpoints: [{ url: 42 }, null, {}] },
    } as unknown as APIExportEndpointSlice;
    const sel = selectEndpoints([odd], EXP, ORIGINS, place);
    assert.deepEqual(sel.urls, []);
    assert.deepEqual(
      sel.refused.map((r) => r.reason),
      ["unparsable", "unparsable", "unparsable"],
    );
  });
});
