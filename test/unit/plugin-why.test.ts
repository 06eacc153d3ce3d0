// `why` through the one REST client, against a local HTTP stand-in for kcp: the dry-run DELETE's refusal is read
// from the ApiError's Status, every blocker past the ten the message names, with its field; an allowed dry run and
// a refusal that is no Status are answered too.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { run } from "../../src/plugin/main.ts";
import { writeFakeKubeconfig } from "../support/fake-kubeconfig.ts";

const WEBHOOK = "dependency-controller.dependencies.opendefense.cloud";
const blockers = Array.from({ length: 12 }, (_, i) => `vm-${String(i + 1).padStart(2, "0")}`);

function refusal(): unknown {
  return {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code: 409,
    reason: "Conflict",
    message: `admission webhook "${WEBHOOK}" denied the request: cannot delete vpcs/my-vpc: still referenced by ${blockers
      .slice(0, 10)
      .map((b) => `VirtualMachine/${b}`)
      .join(", ")} and 2 more`,
    details: {
      causes: blockers.map((b) => ({
        reason: "ReferencedBy",
        message: `VirtualMachine/${b}`,
        field: ".spec.vpcRef.name",
      })),
    },
  };
}

describe("why against a kcp stand-in", () => {
  let server: http.Server;
  let removeKubeconfig = (): void => undefined;
  let kubeconfig: string;
  const deletes: string[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      const json = (code: number, body: unknown): void => {
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      const ws = "/clusters/root:consumer1";
      if (url.pathname === `${ws}/apis`)
        return json(200, { groups: [{ name: "network.test.io", preferredVersion: { version: "v1" } }] });
      if (url.pathname === `${ws}/api/v1`) return json(200, { resources: [] });
      if (url.pathname === `${ws}/apis/network.test.io/v1`)
        return json(200, { resources: [{ name: "vpcs", singularName: "vpc", kind: "VPC", namespaced: true }] });
      if (req.method === "DELETE") {
        deletes.push(`${url.pathname}${url.search}`);
        if (url.pathname.endsWith("/my-vpc")) return json(409, refusal());
        if (url.pathname.endsWith("/free")) return json(200, { kind: "VPC", metadata: { name: "free" } });
        res.writeHead(502, { "content-type": "text/html" });
        return void res.end("<html>bad gateway</html>");
      }
      json(404, { kind: "Status", code: 404, reason: "NotFound", message: "not found" });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const written = writeFakeKubeconfig("plugin-why-", `http://127.0.0.1:${port}/clusters/root:consumer1`, "team-a");
    kubeconfig = written.kubeconfig;
    removeKubeconfig = written.remove;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
    removeKubeconfig();
  });

  const why = async (object: string): Promise<{ code: number; out: string; err: string }> => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(["why", object, `--kubeconfig=${kubeconfig}`], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    return { code, out: out.join(""), err: err.join("") };
  };

  it("lists every blocker from the Status's causes, with its field, as a dry run", async () => {
    const r = await why("vpc/my-vpc");
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /still referenced by 12 objects \(from the webhook's status\.details\.causes\)/);
    for (const b of blockers)
      assert.match(r.out, new RegExp(`VirtualMachine\\s+team-a\\s+${b}\\s+\\.spec\\.vpcRef\\.name`));
    assert.equal(
      deletes.at(-1),
      "/clusters/root:consumer1/apis/network.test.io/v1/namespaces/team-a/vpcs/my-vpc?dryRun=All",
    );
  });

  it("an allowed dry run exits 0; a refusal that is no Status is said in one line", async () => {
    const ok = await why("vpc/free");
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /can be deleted now/);
    const bad = await why("vpc/other");
    assert.equal(bad.code, 2);
    assert.equal(
      bad.err,
      "error: cannot ask about vpcs/other in root:consumer1, namespace team-a: 502 : <html>bad gateway</html>\n",
    );
  });
});
