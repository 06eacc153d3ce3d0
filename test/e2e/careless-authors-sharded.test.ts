// Careless authors on two kcp shards (index lookup), through the front-proxy: the cases of careless.ts. The faulty
// authors' provider workspaces are on the root shard; the holder, which binds their exports and holds their rules'
// dependents, is on shard-1, so the webhook reads those dependents through shard-1's virtual-workspace endpoint, under
// a consent given (and revoked) on the root shard. The innocent consumers are consumer1 on the root shard and consumer2
// on shard-1, next to the holder: a revoked consent refuses (503) the holder's deletes only, not its shard's.
// The controller passes every 2 s (its default is 30 s), as in careless-authors.test.ts.
import { startShardedKcp } from "../../tools/kcp/sharded.ts";
import { PATHS, TOKENS } from "../../tools/kcp/topology.ts";
import { carelessAuthorsTests } from "./careless.ts";
import { e2eSuite } from "./helpers.ts";

const e2e = e2eSuite(() => startShardedKcp({ tokens: TOKENS }), {
  placement: { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" },
  controllerArgs: ["--resync-period=2s"],
});
carelessAuthorsTests(e2e, {
  innocents: [PATHS.consumer1, PATHS.consumer2],
  shards: { authors: "root", holder: "shard-1" },
});
