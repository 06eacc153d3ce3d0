// A starting replica's index readiness: waits for listing types, never for failing ones, and never past the grace.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { TypeHealth } from "../../src/webhook/deletion/index/watches.ts";
import { IndexReadiness } from "../../src/webhook/deletion/index/readiness.ts";
import { FakeClock } from "../support/fake-clock.ts";

function setup(initial: TypeHealth[], synced = true) {
  const clock = new FakeClock();
  const state = { health: initial, synced, expired: [] as string[][] };
  const readiness = new IndexReadiness({
    health: () => state.health,
    registrySynced: () => state.synced,
    clock,
    graceMs: 1_000,
    onGraceExpired: (syncing) => state.expired.push(syncing),
  });
  return { clock, state, readiness };
}

const vms = (s: TypeHealth["state"]): TypeHealth => ({ type: "virtualmachines.compute.test.io", state: s, errors: [] });
const subnets = (s: TypeHealth["state"]): TypeHealth => ({ type: "subnets.network.test.io", state: s, errors: [] });

test("index readiness waits for the registry, then for types still listing, and stays ready once settled", () => {
  const { state, readiness } = setup([], false);
  assert.match(readiness.notReadyReason() ?? "", /waits for the rule registry/);
  state.synced = true;
  state.health = [vms("syncing"), subnets("ready")];
  assert.equal(readiness.notReadyReason(), "the index is listing 1 dependent type(s): virtualmachines.compute.test.io");
  state.health = [vms("ready"), subnets("ready")];
  assert.equal(readiness.notReadyReason(), undefined);
  // A later relist or a new rule's type does not take a serving replica out: its deletes get their own 503.
  state.health = [vms("syncing"), subnets("syncing")];
  state.synced = false;
  assert.equal(readiness.notReadyReason(), undefined);
});

test("a type that cannot be read (no consent, shard down) does not hold readiness", () => {
  const { readiness, state } = setup([vms("failing"), subnets("ready")]);
  assert.equal(readiness.notReadyReason(), undefined);
  assert.deepEqual(state.expired, []);
});

test("a type still listing when the grace runs out no longer holds readiness, and is reported once", async () => {
  const { clock, readiness, state } = setup([vms("syncing"), subnets("syncing")]);
  assert.notEqual(readiness.notReadyReason(), undefined);
  await clock.advance(999);
  assert.notEqual(readiness.notReadyReason(), undefined);
  await clock.advance(1);
  assert.equal(readiness.notReadyReason(), undefined);
  assert.equal(readiness.notReadyReason(), undefined);
  assert.deepEqual(state.expired, [["subnets.network.test.io", "virtualmachines.compute.test.io"]]);
});

test("the grace counts from the registry's sync, not from the process start", async () => {
  const { clock, readiness, state } = setup([vms("syncing")], false);
  await clock.advance(5_000);
  assert.match(readiness.notReadyReason() ?? "", /rule registry/);
  state.synced = true;
  assert.match(readiness.notReadyReason() ?? "", /listing 1 dependent type/);
  await clock.advance(999);
  assert.match(readiness.notReadyReason() ?? "", /listing 1 dependent type/);
});
