// Careless authors on one kcp (index lookup): the cases of careless.ts, with consumer1 as the innocent consumer.
// The controller passes every 2 s (its default is 30 s): the rule conditions these cases wait for follow the webhook's
// index report, which the controller reads at its passes.
import { startKcp } from "../../tools/kcp/harness.ts";
import { PATHS, TOKENS } from "../../tools/kcp/topology.ts";
import { carelessAuthorsTests } from "./careless.ts";
import { e2eSuite } from "./helpers.ts";

const e2e = e2eSuite(() => startKcp({ tokens: TOKENS }), { controllerArgs: ["--resync-period=2s"] });
carelessAuthorsTests(e2e, { innocents: [PATHS.consumer1] });
