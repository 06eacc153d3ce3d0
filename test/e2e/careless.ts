// Careless rule authors next to innocent consumers, for any kcp topology (index lookup): a rule's faults refuse only
// the DELETEs where that rule's dependents may be, and a rule that never protected refuses nobody (docs/architecture.md,
// "Blast radius"). Two providers author faulty rules: the gadget author (a provider path that answers 403, then no
// index consent, then a consent given and revoked) and the widget author (the read-only claims declined). One
// consumer, the holder, binds both their exports and holds their dependents. In each case every innocent consumer
// (one that binds neither faulty export) deletes a free VPC and is refused (409, naming the VM) on a VPC its own VM
// references, exactly as before; the faulty rule's status names its fault; and the holder gets the documented answer.
// Every provider and consumer acts with its own ServiceAccount token (kcp.md §9), never kcp-admin; kcp-admin only
// creates the workspaces and lets providers bind the dep-ctrl export, as the operator does.
// careless-authors.test.ts runs the cases on one kcp, careless-authors-sharded.test.ts on two shards.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RestClient } from "../../src/kcp/rest.ts";
import { apiBinding, apply, createWorkspace, waitForBinding, type KObject } from "../../tools/kcp/api.ts";
import { waitFor } from "../../tools/kcp/process.ts";
import { dependencyRule } from "../../tools/kcp/rules.ts";
import { bindGrant, consentToIndex } from "../../tools/kcp/tenant.ts";
import { EXPORT_NAME, PATHS, depCtrlBinding, type KcpEnv } from "../../tools/kcp/topology.ts";
import {
  RULES,
  VPCS,
  assertDenied,
  at,
  create,
  exportedKind,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  type E2E,
} from "./helpers.ts";

const GADGETS = { path: "root:gadget-provider", export: "gadget.test.io", kind: "Gadget", resource: "gadgets" };
const WIDGETS = { path: "root:careless-provider", export: "widget.test.io", kind: "Widget", resource: "widgets" };
type Provider = typeof GADGETS;
/** Binds the network, gadget and widget exports; holds the faulty rules' dependents. */
const HOLDER = "root:gadget-consumer";

/** Where the workspaces go. */
export interface Placement {
  /** Consumers that bind neither faulty author's export (created by the topology). */
  innocents: readonly string[];
  /** Shards of the faulty authors' provider workspaces and of the holder; kcp schedules them when not given. */
  shards?: { authors: string; holder: string };
}

/** A provider exporting one namespaced kind whose objects name a VPC at .spec.vpcRef.name. */
function exportOf(p: Provider): KObject[] {
  const vpcRef = { type: "object", properties: { name: { type: "string" } } };
  return exportedKind({ group: p.export, kind: p.kind, plural: p.resource, specProperties: { vpcRef } });
}

/** The dep-ctrl binding with only the webhook-configuration claim accepted: the read-only claims declined. */
function declinedBinding(): KObject[] {
  return depCtrlBinding(PATHS.depCtrl).map((b) => {
    const spec = b["spec"] as { permissionClaims: { group: string; state: string }[] };
    for (const c of spec.permissionClaims) if (c.group === "apis.kcp.io") c.state = "Rejected";
    return b;
  });
}

const item = (p: Provider, name: string, vpcName: string): KObject => ({
  apiVersion: `${p.export}/v1`,
  kind: p.kind,
  metadata: { name, namespace: "default" },
  spec: { vpcRef: { name: vpcName } },
});

const ruleFor = (p: Provider, name: string, path: string = PATHS.network): KObject =>
  dependencyRule(name, [{ resource: "vpcs", path, exportName: "network.test.io" }], {
    dependent: { group: p.export, kind: p.kind, resource: p.resource },
  });

type Cond = { type: string; status: string; reason: string; message: string };

/** The authors, the holder and the innocent consumers on one running topology. */
class Careless {
  private readonly e2e: E2E<KcpEnv>;
  private readonly placement: Placement;

  constructor(e2e: E2E<KcpEnv>, placement: Placement) {
    this.e2e = e2e;
    this.placement = placement;
  }

  /** The client of the tenant owning workspace `p` (its own token). */
  async as(p: string): Promise<RestClient> {
    return (await this.e2e.tenant(p)).client;
  }

  /** The operator (kcp-admin) creates a workspace; its owner then acts with its own token. */
  private create(path: string, shard: string | undefined) {
    return createWorkspace(this.e2e.kcp.admin, path, shard ? { shard } : {});
  }

  /** The faulty authors' workspaces and the holder (in the first test: after the suite's before). */
  async setUpAuthors(): Promise<void> {
    // The operator offers the dep-ctrl export to every provider (getting-started's premise: providers bind it).
    await apply(this.e2e.kcp.ws(PATHS.depCtrl), bindGrant(EXPORT_NAME));
    for (const p of [GADGETS, WIDGETS]) {
      await this.create(p.path, this.placement.shards?.authors);
      // Each author exports its kind to any consumer that binds it.
      await apply(await this.as(p.path), [...exportOf(p), ...bindGrant(p.export)]);
    }
    await apply(await this.as(GADGETS.path), depCtrlBinding(PATHS.depCtrl));
    await apply(await this.as(WIDGETS.path), declinedBinding());
    for (const p of [GADGETS, WIDGETS]) await waitForBinding(await this.as(p.path), EXPORT_NAME);
    await consentToIndex(await this.as(WIDGETS.path), WIDGETS.export); // its only fault is the declined claims
    await apply(await this.as(PATHS.network), bindGrant("network.test.io"));
    await this.create(HOLDER, this.placement.shards?.holder);
    const holder = await this.as(HOLDER);
    await apply(holder, [
      apiBinding("network.test.io", PATHS.network),
      apiBinding(GADGETS.export, GADGETS.path),
      apiBinding(WIDGETS.export, WIDGETS.path),
    ]);
    for (const b of ["network.test.io", GADGETS.export, WIDGETS.export]) await waitForBinding(holder, b);
    await create(holder, vpc("g-vpc"), item(GADGETS, "g-1", "g-vpc"), vpc("w-vpc"), item(WIDGETS, "w-1", "w-vpc"));
  }

  /** Every innocent consumer as before any faulty rule: a free VPC deleted, one its VM references refused 409. */
  async innocentsAsBefore(tag: string): Promise<void> {
    for (const path of this.placement.innocents) {
      const c = await this.as(path);
      await create(c, vpc(`free-${tag}`), vpc(`used-${tag}`), vm(`vm-${tag}`, { vpc: `used-${tag}` }));
      await waitForProtection(c, `${at(VPCS)}/used-${tag}`, true);
      assert.deepEqual(await tryDelete(c, `${at(VPCS)}/free-${tag}`), { allowed: true }, path);
      assertDenied(
        await tryDelete(c, `${at(VPCS)}/used-${tag}`),
        new RegExp(`cannot delete vpcs/used-${tag}: still referenced by VirtualMachine/vm-${tag}$`),
      );
    }
  }

  /** A dry-run delete of one of the holder's VPCs. */
  async holderDelete(name: string) {
    return tryDelete(await this.as(HOLDER), `${at(VPCS)}/${name}`, { dryRun: true });
  }

  /** Waits for the rule's condition `type` to have `reason`, as its author reads it; returns it. */
  async condition(p: Provider, rule: string, type: string, reason: string): Promise<Cond> {
    const author = await this.as(p.path);
    return waitFor(
      `rule ${rule}: ${type} reason ${reason}`,
      async () => {
        const r = await author.get<{ status?: { conditions?: Cond[] } }>(`${RULES}/${rule}`);
        const c = r.status?.conditions?.find((x) => x.type === type);
        return c?.reason === reason ? c : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 1_000 },
    );
  }

  async deleteRule(p: Provider, rule: string) {
    return (await this.as(p.path)).request("DELETE", `${RULES}/${rule}`);
  }
}

async function path403(c: Careless): Promise<void> {
  await apply(await c.as(GADGETS.path), [ruleFor(GADGETS, "gadgets-private", `${PATHS.consumer1}:private`)]);
  const cond = await c.condition(GADGETS, "gadgets-private", "WorkspacesResolved", "ResolutionFailed");
  assert.match(cond.message, /root:consumer1:private/);
  await c.condition(GADGETS, "gadgets-private", "Ready", "ResolutionFailed");
  await c.innocentsAsBefore("path403");
  await c.deleteRule(GADGETS, "gadgets-private");
}

async function noConsent(c: Careless): Promise<void> {
  await apply(await c.as(GADGETS.path), [ruleFor(GADGETS, "gadgets-need-vpc")]);
  const cond = await c.condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "IndexForbidden");
  assert.match(cond.message, /^not enforced: .*apply deploy\/rbac\/provider-index\.yaml/);
  await c.innocentsAsBefore("noconsent");
  // Where its dependents live, the documented answer: allowed (the rule protects nothing until consent is given).
  assert.deepEqual(await c.holderDelete("g-vpc"), { allowed: true });
}

async function revokedConsent(c: Careless): Promise<void> {
  const author = await c.as(GADGETS.path);
  await consentToIndex(author, GADGETS.export);
  await waitForProtection(await c.as(HOLDER), `${at(VPCS)}/g-vpc`, true, 180_000);
  assertDenied(await c.holderDelete("g-vpc"), /still referenced by Gadget\/g-1$/);
  await c.condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "Indexed");

  const crb = `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kcp-dependency-webhook-index-${GADGETS.export}`;
  await author.request("DELETE", crb);
  // The webhook's open watch of gadgets notices when it is reopened, at its 60 s timeout (a constant of the webhook,
  // EXPORT_WATCH_TIMEOUT_SECONDS, no flag): from then on the holder's deletes are refused, 503.
  const refused = await waitFor(
    "the holder's VPC refused 503",
    async () => {
      const r = await c.holderDelete("g-vpc");
      return !r.allowed && r.status === 503 ? r : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  assert.ok(!refused.allowed);
  assert.match(refused.message, /cannot check dependents of vpcs\/g-vpc yet: the dependents index is not readable/);
  // The holder may be any consumer: the webhook does not tell it whose index, of which type, fails. (kcp's text
  // before the webhook's names the holder's own workspace, root:gadget-consumer.)
  const said = refused.message.slice(refused.message.indexOf("denied the request: "));
  for (const secret of ["gadget", GADGETS.path, "gadgets-need-vpc"])
    assert.ok(!said.includes(secret), `the webhook's message names ${secret}: ${said}`);
  await c.innocentsAsBefore("revoked");
  // The rule's status follows the webhook's index report, which is written at the report's next pass (the next change
  // in the index, such as the VMs the innocents just created, or its minute resync), and the controller's next pass.
  const cond = await c.condition(GADGETS, "gadgets-need-vpc", "DependentsIndexed", "IndexRevoked");
  assert.match(cond.message, /refused \(503\) until \d{4}-\d\d-\d\dT[\d:]+Z, then this rule is not enforced/);
  await c.deleteRule(GADGETS, "gadgets-need-vpc");
}

async function declinedClaims(c: Careless): Promise<void> {
  await apply(await c.as(WIDGETS.path), [ruleFor(WIDGETS, "widgets-need-vpc")]);
  const cond = await c.condition(WIDGETS, "widgets-need-vpc", "ReferencesValid", "ChecksDeclined");
  assert.match(cond.message, /^not enforced: this workspace declined the read-only claims/);
  await c.condition(WIDGETS, "widgets-need-vpc", "Ready", "ChecksDeclined");
  await c.innocentsAsBefore("declined");
  // Where its dependents live: allowed, although the index sees the widget naming the VPC.
  assert.deepEqual(await c.holderDelete("w-vpc"), { allowed: true });
}

/** Registers the cases, in order (each builds on the one before), against the suite's kcp. */
export function carelessAuthorsTests(e2e: E2E<KcpEnv>, placement: Placement): void {
  const c = new Careless(e2e, placement);
  test("baseline: the innocent consumers as they are before any faulty rule", async () => {
    await c.setUpAuthors();
    await c.innocentsAsBefore("base");
  });
  test("a rule whose provider path answers 403 is not enforced: nobody waits for it", () => path403(c));
  test("a rule whose author never gave the index consent is not enforced, anywhere", () => noConsent(c));
  test("a revoked consent fails closed only where the rule's dependents were", () => revokedConsent(c));
  test("a rule whose author declined the read-only claims is not enforced, and says so", () => declinedClaims(c));
}
