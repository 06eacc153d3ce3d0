// A hostile provider on two kcp shards (index lookup), through the front-proxy: the cases of hostile.ts. As in
// careless-authors-sharded.test.ts, the attacker's workspace is on the root shard and the holder (the consumer that
// binds the attacker's Gadgets) on shard-1, so the attacker's legitimate endpoint is shard-1's virtual workspace. The
// innocent consumers are consumer1 on the root shard and consumer2 on shard-1, next to the holder. The dep-ctrl
// export starts without its maximal permission policy (see hostile-provider.test.ts); the controller passes every 2 s.
import { startShardedKcp } from "../../tools/kcp/sharded.ts";
import { PATHS, TOKENS } from "../../tools/kcp/topology.ts";
import { e2eSuite } from "./helpers.ts";
import { hostileProviderTests } from "./hostile.ts";

const e2e = e2eSuite(() => startShardedKcp({ tokens: TOKENS }), {
  placement: { depCtrl: "root", network: "root", compute: "root", consumer1: "root", consumer2: "shard-1" },
  maximalPermissionPolicy: false,
  controllerArgs: ["--resync-period=2s"],
});
hostileProviderTests(e2e, {
  innocents: [PATHS.consumer1, PATHS.consumer2],
  shards: { attacker: "root", holder: "shard-1" },
});
