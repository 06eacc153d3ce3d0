// "Ready" must mean "refusing": a user who waits for a new rule's Ready condition, as getting-started tells them to
// (`kubectl wait --for=condition=Ready`), and deletes a referenced object the moment it returns must be refused (409).
// Shared by the e2e files of each lookup mode (protection: index, live/protection: live, original-manifests: auto with
// --enforce-unverified-rules), on their own kcp. Each round starts from no webhook configuration for the dependency
// type (the suite's rules are removed first and restored last), so the rule's Ready races everything that has to
// happen before kcp refuses: the controller's write of the configuration, kcp's propagation of it to the admission
// chain, the webhook's registry (the rule and the controller's verdict on it) and its lookup of the dependent type.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { apply, type KObject } from "../../tools/kcp/api.ts";
import type { KcpEnv } from "../../tools/kcp/layout.ts";
import { at, RULES, tryDelete, vm, vpc, VPCS, type DeleteOutcome } from "../../tools/kcp/objects.ts";
import type { Tenant } from "../../tools/kcp/tenant.ts";
import { waitForProtection, waitForVwc } from "./helpers.ts";

const run = promisify(execFile);

export interface ReadyRace {
  env: KcpEnv;
  /** The provider tenant the rules are written as (its own workspace-scoped token). */
  provider: Tenant;
  /** The consumer tenant that deletes (its own workspace-scoped token). */
  consumer: Tenant;
  /** The rule, under the given name: its dependent is the VM type, one dependency the VPC type by .spec.vpcRef.name. */
  rule: (name: string) => KObject;
  /** The suite's rules on the VPC type, removed before the rounds and restored (re-applied) after them. */
  suiteRules: { names: string[]; restore: KObject[] };
  rounds: number;
}

/** One round's outcome: the immediate DELETE's answer after `kubectl wait` returned. */
export interface RaceRound {
  rule: string;
  outcome: DeleteOutcome;
}

/** `kubectl wait --for=condition=Ready` on the rule, as the provider tenant runs it (its token, kcp's CA). */
async function kubectlWaitReady(r: ReadyRace, name: string): Promise<void> {
  const ca = path.join(r.env.rootDir, "ready-race-ca.pem");
  writeFileSync(ca, r.env.caPem);
  await run("/usr/bin/kubectl", [
    `--server=${r.env.baseUrl}/clusters/${r.provider.workspace}`,
    `--certificate-authority=${ca}`,
    `--token=${r.provider.token}`,
    "wait",
    "--for=condition=Ready",
    "--timeout=240s",
    `dependencyrules.dependencies.opendefense.cloud/${name}`,
  ]);
}

/** Runs the rounds; returns each round's outcome (the caller asserts, so a failure shows every round). */
export async function readyRace(r: ReadyRace): Promise<RaceRound[]> {
  const provider = r.provider.client;
  const consumer = r.consumer.client;
  for (const name of r.suiteRules.names) await provider.request("DELETE", `${RULES}/${name}`);
  await waitForVwc(r.env, false);
  const rounds: RaceRound[] = [];
  for (let i = 0; i < r.rounds; i++) {
    const name = `ready-race-${i}`;
    const target = `${at(VPCS)}/${name}`;
    await apply(consumer, [vpc(name), vm(name, { vpc: name })]);
    await waitForProtection(consumer, target, false);
    await apply(provider, [r.rule(name)]);
    await kubectlWaitReady(r, name);
    // At once, as a user would: no wait for anything else.
    const outcome = await tryDelete(consumer, target);
    rounds.push({ rule: name, outcome });
    await provider.request("DELETE", `${RULES}/${name}`);
    await waitForVwc(r.env, false);
  }
  await apply(provider, r.suiteRules.restore);
  await waitForVwc(r.env, true);
  return rounds;
}
