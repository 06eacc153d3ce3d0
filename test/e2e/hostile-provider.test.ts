// A hostile provider on one kcp (index lookup): the cases of hostile.ts, with consumer2 as the innocent consumer (it
// never binds an export of the attacker). The dep-ctrl export starts without its maximal permission policy, so the
// attacker can forge its rule's status and the cases prove that nothing reads it; a later case applies the policy
// and sees kcp refuse the write. The controller passes every 2 s (its default is 30 s): the rule conditions these
// cases wait for follow the webhook's index report, which the controller reads at its passes.
import { startKcp } from "../../tools/kcp/harness.ts";
import { PATHS, TOKENS } from "../../tools/kcp/topology.ts";
import { e2eSuite } from "./helpers.ts";
import { hostileProviderTests } from "./hostile.ts";

const e2e = e2eSuite(() => startKcp({ tokens: TOKENS }), {
  maximalPermissionPolicy: false,
  controllerArgs: ["--resync-period=2s"],
});
hostileProviderTests(e2e, { innocents: [PATHS.consumer2] });
