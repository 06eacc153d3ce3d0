// `why` through the one REST client, against a local HTTP stand-in for kcp: the dry-run DELETE's refusal is read
// from the ApiError's Status, every blocker past the ten the message names, with its field; an allowed dry run and
// a refusal that is no Status are answered too. An object being deleted is explained by its finalizers, aged by the
// injected clock; a namespace being deleted by the objects left in it, and a type the user may not list is a note.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { run } from "../../src/plugin/main.ts";
import type { WhyDocument } from "../../src/plugin/commands/why/report.ts";
import { realClock } from "../../src/util/clock.ts";
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
  const gets: string[] = [];
  const held = {
    metadata: {
      name: "held",
      namespace: "team-a",
      deletionTimestamp: "2026-11-28T05:00:00Z",
      finalizers: ["syncagent.kcp.io/cleanup"],
    },
  };
  const vpcPath = (name: string): string => `/apis/network.test.io/v1/namespaces/team-a/vpcs/${name}`;
  const objects = new Map<string, unknown>([
    ...["my-vpc", "free", "other"].map((n): [string, unknown] => [vpcPath(n), { metadata: { name: n } }]),
    [vpcPath("held"), held],
    ["/apis/network.test.io/v1/namespaces/team-a/vpcs", { items: [held] }],
    [
      "/api/v1/namespaces/team-a",
      {
        metadata: { name: "team-a", deletionTimestamp: "2026-11-28T05:59:00Z" },
        spec: { finalizers: ["kubernetes"] },
        status: { phase: "Terminating" },
      },
    ],
  ]);

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
      if (url.pathname === `${ws}/api/v1`)
        return json(200, {
          resources: [
            { name: "namespaces", singularName: "namespace", kind: "Namespace", namespaced: false, shortNames: ["ns"] },
            { name: "configmaps", kind: "ConfigMap", namespaced: true, verbs: ["get", "list"] },
            { name: "bindings", kind: "Binding", namespaced: true, verbs: ["create"] },
          ],
        });
      if (url.pathname === `${ws}/apis/network.test.io/v1`)
        return json(200, {
          resources: [{ name: "vpcs", singularName: "vpc", kind: "VPC", namespaced: true, verbs: ["get", "list"] }],
        });
      if (req.method === "GET") {
        gets.push(url.pathname);
        const served = objects.get(url.pathname.slice(ws.length));
        if (served) return json(200, served);
        if (url.pathname.endsWith("/configmaps")) return json(403, { kind: "Status", code: 403, message: "no" });
      }
      if (req.method === "DELETE") {
        deletes.push(`${url.pathname}${url.search}`);
        if (url.pathname.endsWith("/my-vpc")) return json(409, refusal());
        if (/\/(free|held|team-a)$/.test(url.pathname)) return json(200, { kind: "Status", status: "Success" });
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

  const clock = { ...realClock, now: () => Date.parse("2026-11-28T06:00:00Z") };
  const why = async (object: string, ...flags: string[]): Promise<{ code: number; out: string; err: string }> => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const code = await run(["why", object, `--kubeconfig=${kubeconfig}`, ...flags], io, {}, clock);
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

  it("an object being deleted: its finalizer, its owner and its age by the injected clock; exit 1", async () => {
    const r = await why("vpc/held");
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /being deleted since 2026-11-28T05:00:00Z \(1h ago\), and still here/);
    assert.match(r.out, /syncagent\.kcp\.io\/cleanup\s+api-syncagent/);
    assert.equal(r.err, "");
    const doc = JSON.parse((await why("vpc/held", "-o", "json")).out) as WhyDocument;
    assert.deepEqual([doc.verdict, doc.exitCode, doc.terminating!.ageSeconds], ["terminating", 1, 3600]);
  });

  it("a namespace being deleted: the objects left by type; what may not be listed is a note", async () => {
    gets.length = 0;
    const r = await why("ns/team-a");
    assert.equal(r.code, 1, r.err);
    assert.match(
      r.out,
      /namespaces\/team-a \(root:consumer1\): being deleted since .* \(1m ago\), and still here, phase Terminating/,
    );
    assert.match(r.out, /vpcs\.network\.test\.io\s+1\s+held \(deleting; syncagent\.kcp\.io\/cleanup\)/);
    assert.equal(r.err, "note: you may not list configmaps in namespace team-a\n");
    // Only what discovery says is listable was listed (no bindings).
    assert.ok(!gets.some((g) => g.endsWith("/bindings")), gets.join(" "));
  });

  it("an object that is not there: exit 2, found by the read before any dry run", async () => {
    deletes.length = 0;
    const r = await why("vpc/missing");
    assert.equal(r.code, 2);
    assert.equal(r.err, "error: vpcs/missing not found in root:consumer1, namespace team-a\n");
    assert.deepEqual(deletes, []);
  });
});
