// teardown through the one REST client, against a local HTTP stand-in for kcp that refuses a referenced DELETE the
// way the webhook does (a 409 Status with details.causes): the bound types come from APIBindings (kcp's own
// *.kcp.io types left out), the plan from dry runs of the types the readable rules protect (read by the walk from root
// or from the --rule-workspace named; of every type when the rules cannot all be read), the run deletes with the uid precondition and no dry run, and reads objects again until
// gone; a blocker in another namespace makes the plan incomplete (exit 1).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { run } from "../../src/plugin/main.ts";
import { writeFakeKubeconfig } from "../support/fake-kubeconfig.ts";

const WS = "/clusters/root:consumer1";
const PROVIDER = "/clusters/root:network-provider";
const VPCS = `${WS}/apis/network.test.io/v1/namespaces/team-a/vpcs`;
const VMS = `${WS}/apis/compute.test.io/v1/namespaces/team-a/virtualmachines`;

/** The fixture rule (VMs depend on their VPC and Subnet), as read from root: VPCs are the one type here it protects. */
const VPC_RULE = (() => {
  const text = readFileSync(new URL("../fixtures/dependencyrule-vm.yaml", import.meta.url), "utf8");
  const rule = parse(text.replaceAll("${NETWORK_PROVIDER_PATH}", "root:network-provider")) as {
    metadata: Record<string, unknown>;
  };
  rule.metadata["annotations"] = { "kcp.io/cluster": "lc-root" };
  return rule;
})();

interface Obj {
  kind: string;
  name: string;
  uid: string;
  ref?: string;
  /** The uid a list shows: another object of the same name replaced the one listed. */
  listedUid?: string;
  annotated?: boolean;
}

describe("teardown against a kcp stand-in", () => {
  let server: http.Server;
  let removeKubeconfig = (): void => undefined;
  let kubeconfig: string;
  let objects: Map<string, Obj>;
  const requests: string[] = [];
  /** root lists no child workspace and holds a rule protecting VPCs; else the user may not read root (403). */
  let rulesReadable = false;

  const item = (o: Obj, listed = false) => ({
    kind: o.kind,
    metadata: { name: o.name, namespace: "team-a", uid: (listed && o.listedUid) || o.uid },
  });
  const patches: unknown[] = [];
  const refusal = (blockers: string[]) => ({
    kind: "Status",
    code: 409,
    reason: "Conflict",
    message: `admission webhook "w" denied the request: cannot delete: still referenced by ${blockers.join(", ")}`,
    details: { causes: blockers.map((b) => ({ reason: "ReferencedBy", message: b, field: ".spec.vpcRef.name" })) },
  });

  /** The user's view of root: its child workspaces and its DependencyRules, or 403 for both. */
  function root(p: string, json: (c: number, b: unknown) => void): void {
    if (!rulesReadable) return json(403, { kind: "Status", code: 403, reason: "Forbidden", message: "forbidden" });
    if (p.endsWith("/workspaces")) return json(200, { items: [] });
    json(200, { items: [VPC_RULE] });
  }

  /** The provider's workspace: its rules, readable by the consumer; any other workspace: 403. */
  function provider(p: string, json: (c: number, b: unknown) => void): void {
    if (p === `${PROVIDER}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`)
      return json(200, { items: [VPC_RULE] });
    json(403, { kind: "Status", code: 403, reason: "Forbidden", message: "forbidden" });
  }

  function handle(req: http.IncomingMessage, body: string, url: URL, json: (c: number, b: unknown) => void): void {
    const p = url.pathname;
    if (p.startsWith("/clusters/root/")) return root(p, json);
    if (p.startsWith("/clusters/root:") && !p.startsWith(`${WS}/`)) return provider(p, json);
    if (p === `${WS}/apis/apis.kcp.io/v1alpha1/apibindings`)
      return json(200, {
        items: [
          { status: { boundResources: [{ group: "network.test.io", resource: "vpcs" }] } },
          { status: { boundResources: [{ group: "compute.test.io", resource: "virtualmachines" }] } },
          { status: { boundResources: [{ group: "tenancy.kcp.io", resource: "workspaces" }] } },
        ],
      });
    if (p === `${WS}/apis`)
      return json(200, {
        groups: ["network.test.io", "compute.test.io", "tenancy.kcp.io"].map((name) => ({
          name,
          preferredVersion: { version: "v1" },
        })),
      });
    if (p === `${WS}/api/v1`) return json(200, { resources: [] });
    const res = (name: string, kind: string, namespaced = true) =>
      json(200, { resources: [{ name, kind, namespaced }] });
    if (p === `${WS}/apis/network.test.io/v1`) return res("vpcs", "VPC");
    if (p === `${WS}/apis/compute.test.io/v1`) return res("virtualmachines", "VirtualMachine");
    if (p === `${WS}/apis/tenancy.kcp.io/v1`) return res("workspaces", "Workspace", false);
    if (p === VPCS || p === VMS) {
      const kind = p === VPCS ? "VPC" : "VirtualMachine";
      return json(200, { items: [...objects.values()].filter((o) => o.kind === kind).map((o) => item(o, true)) });
    }
    const o = objects.get(p);
    if (!o) return json(404, { kind: "Status", code: 404, reason: "NotFound", message: "not found" });
    if (req.method === "GET") return json(200, item(o));
    if (req.method === "PATCH") return patch(o, body, json);
    if (req.method !== "DELETE") return json(405, {});
    const blockers = o.annotated
      ? []
      : [...objects.values()].filter((x) => x.ref === o.name).map((x) => `${x.kind}/${x.name}`);
    if (o.name === "vpc-outside") blockers.push("VirtualMachine/team-b/elsewhere");
    if (blockers.length > 0) return json(409, refusal(blockers));
    if (url.searchParams.get("dryRun") === "All") return json(200, item(o));
    const uid = (JSON.parse(body || "{}") as { preconditions?: { uid?: string } }).preconditions?.uid;
    if (uid !== o.uid) return json(409, { kind: "Status", code: 409, reason: "Conflict", message: "Precondition" });
    objects.delete(p);
    json(200, item(o));
  }

  /** A merge patch as the apiserver takes it: a uid other than the object's is refused (uid is immutable, 422). */
  function patch(o: Obj, body: string, json: (c: number, b: unknown) => void): void {
    const meta = (JSON.parse(body) as { metadata: { uid?: string; annotations?: Record<string, string | null> } })
      .metadata;
    patches.push(meta);
    if (meta.uid !== undefined && meta.uid !== o.uid)
      return json(422, { kind: "Status", code: 422, reason: "Invalid", message: "metadata.uid: field is immutable" });
    o.annotated = meta.annotations?.["dependencies.opendefense.cloud/skip-protection"] === "true";
    json(200, item(o));
  }

  before(async () => {
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://x");
        requests.push(`${req.method} ${url.pathname}${url.search}`);
        handle(req, body, url, (code, b) => {
          res.writeHead(code, { "content-type": "application/json" });
          res.end(JSON.stringify(b));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const written = writeFakeKubeconfig("plugin-teardown-", `http://127.0.0.1:${port}${WS}`);
    kubeconfig = written.kubeconfig;
    removeKubeconfig = written.remove;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
    removeKubeconfig();
  });

  const seed = (extra: Obj[] = []): void => {
    objects = new Map(
      [
        { kind: "VPC", name: "vpc-1", uid: "u1" },
        { kind: "VirtualMachine", name: "vm-1", uid: "u2", ref: "vpc-1" },
        ...extra,
      ].map((o) => [`${o.kind === "VPC" ? VPCS : VMS}/${o.name}`, o]),
    );
  };

  const teardown = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = "";
    let err = "";
    const code = await run(["teardown", "-n", "team-a", ...args, `--kubeconfig=${kubeconfig}`], {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err };
  };

  const dryRuns = (): string[] => requests.filter((q) => q.startsWith("DELETE") && q.includes("dryRun=All"));
  const realDeletes = (): string[] => requests.filter((q) => q.startsWith("DELETE") && !q.includes("dryRun"));

  it("--plan: VMs first, then the VPC they name; kcp's own types are not listed", async () => {
    seed();
    requests.length = 0;
    const r = await teardown("--plan");
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /2 object\(s\) in 2 wave\(s\)/);
    assert.match(r.out, /^1\s+VirtualMachine\s+team-a\s+vm-1\s*$/m);
    assert.match(r.out, /^2\s+VPC\s+team-a\s+vpc-1\s+VirtualMachine\/team-a\/vm-1\s*$/m);
    assert.ok(
      !requests.some((q) => q.includes(`${WS}/apis/tenancy.kcp.io/v1/workspaces`)),
      "tenancy.kcp.io is not taken down",
    );
    assert.deepEqual(realDeletes(), [], "nothing deleted");
    // The rules cannot be read (403 on root): protection might refuse any type, so every object is dry-run.
    assert.equal(dryRuns().length, 2);
    assert.match(r.err, /not every DependencyRule is readable: dry-running every object/);
  });

  it("--plan with the rules readable: only the type a rule protects is dry-run, the plan the same", async () => {
    seed();
    rulesReadable = true;
    requests.length = 0;
    try {
      const r = await teardown("--plan");
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /2 object\(s\) in 2 wave\(s\)/);
      assert.match(r.out, /^2\s+VPC\s+team-a\s+vpc-1\s+VirtualMachine\/team-a\/vm-1\s*$/m);
      assert.deepEqual(dryRuns(), [`DELETE ${VPCS}/vpc-1?dryRun=All`]);
      assert.equal(r.err, "");
    } finally {
      rulesReadable = false;
    }
  });

  it("--plan --rule-workspace: root unreadable, the provider's rules read: only its protected type is dry-run", async () => {
    seed();
    requests.length = 0;
    const r = await teardown("--plan", "--rule-workspace", "root:network-provider");
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^2\s+VPC\s+team-a\s+vpc-1\s+VirtualMachine\/team-a\/vm-1\s*$/m);
    assert.deepEqual(dryRuns(), [`DELETE ${VPCS}/vpc-1?dryRun=All`], "1 dry run, where the walk from root costs 2");
    assert.ok(!requests.some((q) => q.includes("/clusters/root/")), "no walk from root");
    assert.equal(r.err, "");
  });

  it("--plan --rule-workspace naming a workspace the user may not read: says which, dry-runs every object", async () => {
    seed();
    requests.length = 0;
    const r = await teardown("--plan", "--rule-workspace", "root:network-provider", "--rule-workspace", "root:secret");
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /2 object\(s\) in 2 wave\(s\)/);
    assert.equal(dryRuns().length, 2);
    assert.match(r.err, /you may not read dependencyrules in root:secret/);
    assert.match(r.err, /not every DependencyRule is readable: dry-running every object/);
  });

  it("--rule-workspace without --plan, or not a workspace path: a clear error, nothing deleted", async () => {
    seed();
    requests.length = 0;
    const run = await teardown("--rule-workspace", "root:network-provider");
    assert.equal(run.code, 2);
    assert.match(run.err, /--rule-workspace is for --plan/);
    assert.deepEqual(requests, []);
    const bad = await teardown("--plan", "--rule-workspace", "not a path");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--rule-workspace not a path: not a workspace path/);
    assert.deepEqual(dryRuns(), []);
    assert.equal(objects.size, 2);
  });

  it("runs: deletes with the uid precondition, dependents first, no dry run, and the namespace ends empty", async () => {
    seed();
    requests.length = 0;
    const r = await teardown("--timeout=30s");
    assert.equal(r.code, 0, r.out + r.err);
    // The VPC, listed first, is asked while its VM is there: refused (nothing deleted), asked again once it is gone.
    assert.match(r.out, /done: 2 object\(s\) deleted in 2 round\(s\), 1 delete\(s\) refused/);
    assert.deepEqual(dryRuns(), []);
    assert.deepEqual(realDeletes().sort(), [`DELETE ${VMS}/vm-1`, `DELETE ${VPCS}/vpc-1`, `DELETE ${VPCS}/vpc-1`]);
    assert.equal(realDeletes().at(-1), `DELETE ${VPCS}/vpc-1`);
    assert.equal(objects.size, 0);
  });

  it("a blocker in another namespace: the plan names it and exits 1", async () => {
    seed([{ kind: "VPC", name: "vpc-outside", uid: "u3" }]);
    const r = await teardown("--plan", "-o", "json");
    assert.equal(r.code, 1, r.err);
    const plan = JSON.parse(r.out) as { complete: boolean; stuck: { id: string; reason: string; detail: string }[] };
    assert.equal(plan.complete, false);
    assert.deepEqual(plan.stuck, [
      {
        id: "network.test.io/vpcs/team-a/vpc-outside",
        reason: "blocked-outside",
        detail: "blocked by VirtualMachine/team-b/elsewhere, not part of this teardown",
      },
    ]);
  });

  const cycle = (listedUid?: string): Obj[] => [
    { kind: "VPC", name: "vpc-c", uid: "u5", ref: "vm-c", ...(listedUid ? { listedUid } : {}) },
    { kind: "VirtualMachine", name: "vm-c", uid: "u6", ref: "vpc-c" },
  ];

  it("--skip-protection on a cycle member: a merge patch naming its uid, then the DELETE with its uid", async () => {
    seed(cycle());
    requests.length = 0;
    patches.length = 0;
    const r = await teardown("--timeout=30s", "--skip-protection", "vpc/vpc-c");
    assert.equal(r.code, 0, r.out + r.err);
    assert.deepEqual(patches, [
      { uid: "u5", annotations: { "dependencies.opendefense.cloud/skip-protection": "true" } },
    ]);
    const real = realDeletes();
    // Its DELETEs before the annotation were refused (the cycle): the one that went is the last, after the rest.
    assert.equal(real.lastIndexOf(`DELETE ${VPCS}/vpc-c`) > real.indexOf(`DELETE ${VMS}/vm-1`), true, "after the rest");
    assert.equal(objects.size, 0);
  });

  it("--skip-protection on an object replaced since it was listed: the PATCH fails on its uid, nothing deleted", async () => {
    seed(cycle("u5-old"));
    requests.length = 0;
    patches.length = 0;
    const r = await teardown("--timeout=30s", "--skip-protection", "vpc/vpc-c");
    assert.equal(r.code, 1, r.out + r.err);
    assert.equal(patches.length > 0, true);
    const patched = requests.findIndex((q) => q.startsWith("PATCH"));
    assert.ok(!requests.slice(patched).includes(`DELETE ${VPCS}/vpc-c`), "no DELETE after the failed PATCH");
    assert.ok(objects.has(`${VPCS}/vpc-c`) && objects.has(`${VMS}/vm-c`));
    assert.match(r.out, /NOT finished: 2 object\(s\) cannot be deleted/);
    assert.match(r.out, /VPC\/team-a\/vpc-c +failed +not annotated: gone or replaced .*its uid changed/);
    assert.match(
      r.out,
      /VirtualMachine\/team-a\/vm-c +cycle +on a cycle: VirtualMachine\/team-a\/vm-c → VPC\/team-a\/vpc-c/,
    );
  });

  const whole = async (ask: ((q: string) => Promise<string>) | undefined, ...args: string[]) => {
    let out = "";
    let err = "";
    const io = { out: (t: string) => (out += t), err: (t: string) => (err += t), ...(ask ? { ask } : {}) };
    const code = await run(["teardown", "--workspace", "root:consumer1", ...args, `--kubeconfig=${kubeconfig}`], io);
    return { code, out, err };
  };

  it("--workspace without -n, no terminal, no --yes: no request at all, exit 2, says why", async () => {
    seed();
    requests.length = 0;
    const r = await whole(undefined);
    assert.equal(r.code, 2);
    assert.match(r.err, /nothing deleted: --workspace without -n takes down .*root:consumer1.*confirm with --yes/);
    assert.deepEqual(requests, []);
    assert.equal(objects.size, 2);
  });

  it("--workspace without -n asks; anything but yes deletes nothing; --plan and --yes do not ask", async () => {
    seed();
    requests.length = 0;
    const asked: string[] = [];
    const no = await whole((q) => (asked.push(q), Promise.resolve("n")));
    assert.equal(no.code, 2);
    assert.match(no.err, /nothing deleted: not confirmed/);
    assert.match(asked[0]!, /This deletes every object .* in workspace root:consumer1/);
    assert.deepEqual(requests, []);
    const never = (): Promise<string> => Promise.reject(new Error("asked"));
    assert.equal((await whole(never, "--plan")).code, 0);
    const yes = await whole(never, "--yes", "--timeout=30s");
    assert.equal(yes.code, 0, yes.err);
    assert.match(yes.out, /teardown of root:consumer1 done/);
  });
});
