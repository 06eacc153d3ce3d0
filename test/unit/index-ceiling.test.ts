// The replica's index memory ceiling (ceiling.ts), first as a ledger on its own (properties over random charges,
// releases and retired stores: the total never passes the ceiling, a workspace within its share is never refused and
// never demoted), then through ReferenceStores: a tenant with five workspaces fills the index, an innocent workspace
// arriving after it still gets its dependents read, and only the tenant's lookups of that type answer "share".
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { Lookup } from "../../src/webhook/admission.ts";
import { IndexLedger, type LedgerAccount } from "../../src/webhook/deletion/index/ceiling.ts";
import { ReferenceStore } from "../../src/webhook/deletion/index/store.ts";
import { fp, vmLookup } from "./helpers-rules.ts";

const VPC = fp(".spec.vpcRef.name");
const NICS = fp(".spec.nics[*].subnetRef.name");

const lookup = (consumer: string, name: string, o: Partial<Lookup> = {}): Lookup =>
  vmLookup({ consumer: consumer as LogicalClusterName, name, namespace: "ns", ...o });

function vm(cluster: string, name: string, vpc: string, subnets: string[] = []) {
  return {
    metadata: { name, namespace: "ns", annotations: { "kcp.io/cluster": cluster } },
    spec: { vpcRef: { name: vpc }, nics: subnets.map((s) => ({ subnetRef: { name: s } })) },
  };
}

/** A store of one author's type as the ledger sees one: records which workspaces it was told to demote. */
class FakeAccount implements LedgerAccount {
  readonly author: string;
  demoted: string[] = [];
  constructor(author = "p") {
    this.author = author;
  }
  demote(workspace: string): void {
    this.demoted.push(workspace);
  }
}

describe("IndexLedger", () => {
  it("lets anyone use free room, and takes it back from the largest workspace for one within its share", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const a = new FakeAccount();
    const b = new FakeAccount();
    for (let i = 0; i < 10; i++) assert.ok(ledger.admit(a, "hog", 100));
    assert.equal(ledger.total(), 1_000);
    assert.ok(!ledger.admit(a, "hog", 1), "past the ceiling and past its share (the whole ceiling)");
    assert.ok(ledger.admit(b, "late", 100), "the newcomer's share is 500");
    assert.deepEqual(a.demoted, ["hog"]);
    assert.equal(ledger.usage("p", "hog"), 0);
    assert.equal(ledger.total(), 100);
    assert.equal(ledger.demotions, 1);
  });

  it("demotes the largest store of the largest workspace, and no more than needed", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const small = new FakeAccount();
    const big = new FakeAccount();
    const other = new FakeAccount();
    ledger.admit(small, "hog", 200);
    ledger.admit(big, "hog", 500);
    ledger.admit(other, "mid", 300);
    assert.ok(ledger.admit(other, "late", 300)); // shares are 333: hog (700) gives up its 500 store
    assert.deepEqual([small.demoted, big.demoted, other.demoted], [[], ["hog"], []]);
    assert.equal(ledger.usage("p", "hog"), 200);
    assert.equal(ledger.total(), 800);
  });

  it("refuses a workspace past its share when there is no room, and demotes nobody for it", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const a = new FakeAccount();
    ledger.admit(a, "w1", 500);
    ledger.admit(a, "w2", 500);
    assert.ok(!ledger.admit(a, "w1", 1));
    assert.ok(!ledger.admit(a, "w3", 334), "past a newcomer's share (1,000 / 3)");
    assert.deepEqual(a.demoted, []);
    assert.equal(ledger.share("p", "w3"), 1_000 / 3, "the refused newcomer was not left counted");
  });

  it("gives back a retired store's charges (a relist's old store), and ignores a release after a demotion", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const old = new FakeAccount();
    const fresh = new FakeAccount();
    ledger.admit(old, "w1", 400);
    ledger.admit(fresh, "w1", 400);
    ledger.retire(old);
    assert.equal(ledger.usage("p", "w1"), 400);
    ledger.admit(fresh, "w1", 600);
    ledger.admit(old, "w2", 100); // w1 is demoted in `fresh` for w2
    ledger.release(fresh, "w1", 400);
    assert.equal(ledger.usage("p", "w1"), 0);
    assert.equal(ledger.total(), 100);
    assert.equal(ledger.authorCount(), 1);
  });

  it("splits the ceiling between authors first: an author with many consumers cannot crowd out another's one", () => {
    // Author "big" has 9 consumer workspaces filling the ceiling; by workspaces alone a tenth would be owed to a
    // newcomer under another author. By authors it is owed half, and gets it.
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const big = new FakeAccount("big");
    const small = new FakeAccount("small");
    for (let w = 0; w < 9; w++) for (let i = 0; i < 10; i++) ledger.admit(big, `c${w}`, 11);
    assert.equal(ledger.total(), 990);
    for (let i = 0; i < 10; i++) assert.ok(ledger.admit(small, "late", 50), `the small author's ${i}th 50 bytes`);
    assert.equal(ledger.usage("small"), 500);
    assert.ok(ledger.usage("big") <= 500);
    assert.ok(big.demoted.length >= 4, "room came from the big author's workspaces");
    const demoted = big.demoted.length;
    let more = 0;
    while (more < 1_000 && ledger.admit(small, "late", 1)) more++;
    assert.equal(ledger.total(), 1_000, "the free room left is anyone's");
    assert.equal(big.demoted.length, demoted, "but past its author's half, nothing more is taken for it");
    assert.deepEqual(small.demoted, []);
  });

  it("takes room for a workspace within its share from its own author's hog, not from another author", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000 });
    const p = new FakeAccount("p");
    const q = new FakeAccount("q");
    ledger.admit(q, "calm", 500); // q at its part, nothing past it
    ledger.admit(p, "hog", 500); // p's part taken by one consumer
    assert.ok(ledger.admit(p, "late", 200), "late's share is p's half over two: 250");
    assert.deepEqual([p.demoted, q.demoted], [["hog"], []]);
    assert.equal(ledger.usage("q", "calm"), 500);
  });

  it("looks at the authors and one author's workspaces to find whom to demote, not at every workspace (counted)", () => {
    const ledger = new IndexLedger({ ceilingBytes: 1_000_000 });
    const accounts = Array.from({ length: 1_000 }, (_, a) => new FakeAccount(`a${a}`));
    // 1,000 authors × 100 workspaces × 10 bytes: 1,000,000, the ceiling, everyone exactly at its share.
    for (const acc of accounts) for (let w = 0; w < 100; w++) ledger.admit(acc, `c${w}`, 10);
    const hog = new FakeAccount("a0");
    ledger.release(accounts[1]!, "c0", 10);
    ledger.release(accounts[1]!, "c1", 10);
    assert.ok(ledger.admit(hog, "c0", 20)); // a0/c0 at 30, past its share of 10, in the room left
    const scanned = ledger.scanned;
    assert.ok(ledger.admit(new FakeAccount("a1"), "c0", 10), "a1/c0 back within its share");
    assert.deepEqual(hog.demoted, ["c0"]);
    const looked = ledger.scanned - scanned;
    assert.ok(looked <= 1_000 + 100, `looked at ${looked} entries for one demotion; 100,000 workspaces are held`);
  });

  it("never passes the ceiling, never refuses or demotes a workspace within its share (property)", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("admit" as const),
        account: fc.integer({ min: 0, max: 5 }),
        tenant: fc.integer({ min: 0, max: 5 }),
        bytes: fc.integer({ min: 1, max: 400 }),
      }),
      fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("retire" as const), account: fc.integer({ min: 0, max: 5 }) }),
    );
    // Six stores of three authors (two types each), six consumer workspaces.
    const authors = ["p0", "p1", "p2"];
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 3_000 }), fc.array(op, { maxLength: 120 }), (ceiling, ops) => {
        const ledger = new IndexLedger({ ceilingBytes: ceiling });
        let admittedWithin = false;
        /** Each holder's usage and share just before the admit in progress (shares counting the newcomer). */
        const before = new Map<string, { usage: number; share: number }>();
        /** Each author's usage (with the bytes being admitted, for the requester's) and part, likewise. */
        const authorBefore = new Map<string, { usage: number; share: number }>();
        const accounts = [0, 1, 2, 3, 4, 5].map((i) => ({
          author: authors[i % 3]!,
          demote(workspace: string): void {
            assert.ok(admittedWithin, "a demotion for a workspace past its share");
            const b = before.get(`${this.author}/${workspace}`)!;
            assert.ok(b.usage > b.share, `${this.author}/${workspace} demoted within its share`);
            const part = authorBefore.get(this.author)!;
            assert.ok(part.usage > part.share, `${workspace} demoted under ${this.author}, within its part`);
          },
        }));
        const charged: { account: number; tenant: string; bytes: number }[] = [];
        for (const o of ops) {
          if (o.kind === "admit") {
            const acc = accounts[o.account]!;
            const tenant = `w${o.tenant}`;
            const within = ledger.usage(acc.author, tenant) + o.bytes <= ledger.share(acc.author, tenant);
            admittedWithin = within;
            before.clear();
            const newAuthor = ledger.usage(acc.author) === 0;
            for (const a of authors) {
              const usage = ledger.usage(a) + (a === acc.author ? o.bytes : 0);
              authorBefore.set(a, { usage, share: ledger.authorShare(acc.author) });
            }
            for (const a of authors)
              for (let t = 0; t < 6; t++) {
                const usage = ledger.usage(a, `w${t}`);
                if (usage === 0) continue;
                const nAuthors = ledger.authorCount() + (newAuthor ? 1 : 0);
                const nHolders = countHolders(ledger, a) + (a === acc.author && ledger.usage(a, tenant) === 0 ? 1 : 0);
                before.set(`${a}/w${t}`, { usage, share: ceiling / nAuthors / nHolders });
              }
            const ok = ledger.admit(acc, tenant, o.bytes);
            if (within) assert.ok(ok, `${acc.author}/${tenant} refused within its share`);
            if (ok) charged.push({ account: o.account, tenant, bytes: o.bytes });
          } else if (o.kind === "release" && charged.length > 0) {
            const [c] = charged.splice(o.pick % charged.length, 1);
            ledger.release(accounts[c!.account]!, c!.tenant, c!.bytes);
          } else if (o.kind === "retire") ledger.retire(accounts[o.account]!);
          assert.ok(ledger.total() <= ceiling, `total ${ledger.total()} past ${ceiling}`);
          let sum = 0;
          for (const a of authors) {
            let byHolders = 0;
            for (let t = 0; t < 6; t++) byHolders += ledger.usage(a, `w${t}`);
            assert.equal(byHolders, ledger.usage(a));
            sum += byHolders;
          }
          assert.equal(sum, ledger.total());
          assert.ok(ledger.total() >= 0);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Holders of `author` now (workspaces w0..w5 charged anything under it). */
function countHolders(ledger: IndexLedger, author: string): number {
  let n = 0;
  for (let t = 0; t < 6; t++) if (ledger.usage(author, `w${t}`) > 0) n++;
  return n;
}

describe("ReferenceStore under a ceiling", () => {
  // One dependent naming 20 subnets costs 120 + name + 89 + 20 × (8 + 63 + 4) ≈ 1,700 bytes by INDEX_COST.
  const subnets = (i: number): string[] =>
    Array.from({ length: 20 }, (_, j) => `s${String(i * 20 + j).padStart(3, "0")}`);
  const fillTenant = (s: ReferenceStore, workspaces: number, each: number): void => {
    for (let w = 0; w < workspaces; w++)
      for (let i = 0; i < each; i++) s.set(`evil${w}/ns/vm${i}`, vm(`evil${w}`, `vm${i}`, "v", subnets(i)));
  };

  it("keeps an innocent workspace that arrives after a tenant filled the index readable, the tenant's deletes 503", () => {
    const ledger = new IndexLedger({ ceilingBytes: 100_000 });
    const s = new ReferenceStore([VPC, NICS], undefined, undefined, { ledger, author: "p" });
    fillTenant(s, 5, 40); // 5 workspaces × 40 × ~1.7 kB: 3.4 times the ceiling
    assert.ok(ledger.total() <= 100_000);
    assert.ok(s.unreadable.share > 0, "the tenant's workspaces went past their shares");
    for (let i = 0; i < 20; i++) s.set(`good/ns/vm${i}`, vm("good", `vm${i}`, `vpc${i}`, subnets(i)));
    assert.ok(ledger.total() <= 100_000);
    const good = s.find(lookup("good", "vpc3"), 10);
    assert.deepEqual(good, { dependents: [{ namespace: "ns", name: "vm3", field: VPC.source }], complete: true });
    assert.equal(s.find(lookup("good", "free-vpc"), 10).unreadable, undefined);
    assert.deepEqual(s.workspacesUnreadable().names, 0);
    const refused = [0, 1, 2, 3, 4].filter((w) => s.find(lookup(`evil${w}`, "x"), 10).unreadable === "share");
    assert.ok(refused.length >= 4, `tenant workspaces answering share: ${refused.join(",")}`);
    // Still demoted: the tenant's new dependents in a demoted workspace stay unread (no ping-pong with the innocent).
    const demoted = refused[0]!;
    s.set(`evil${demoted}/ns/again`, vm(`evil${demoted}`, "again", "v"));
    assert.equal(s.find(lookup(`evil${demoted}`, "v"), 10).unreadable, "share");
  });

  it("lifts a demotion once the workspace has no dependents of the type left, and gives back charges on delete", () => {
    const ledger = new IndexLedger({ ceilingBytes: 10_000 });
    const s = new ReferenceStore([VPC, NICS], undefined, undefined, { ledger, author: "p" });
    for (let i = 0; i < 8; i++) s.set(`hog/ns/vm${i}`, vm("hog", `vm${i}`, "v", subnets(i)));
    s.set("good/ns/a", vm("good", "a", "v", subnets(99)));
    assert.equal(s.find(lookup("hog", "v"), 10).unreadable, "share");
    for (let i = 0; i < 8; i++) s.delete(`hog/ns/vm${i}`);
    assert.equal(ledger.usage("p", "hog"), 0);
    s.set("hog/ns/back", vm("hog", "back", "v"));
    assert.equal(s.find(lookup("hog", "v"), 10).dependents.length, 1);
    s.delete("good/ns/a");
    s.delete("hog/ns/back");
    assert.equal(ledger.total(), 0);
    assert.equal(s.heldBytes().readable, 0);
  });

  it("demotes every readable dependent of the workspace, those that name nothing too", () => {
    const ledger = new IndexLedger({ ceilingBytes: 10_000 });
    const s = new ReferenceStore([VPC, NICS], undefined, undefined, { ledger, author: "p" });
    s.set("hog/ns/none", vm("hog", "none", "")); // names nothing, but is charged its record
    for (let i = 0; i < 8; i++) s.set(`hog/ns/vm${i}`, vm("hog", `vm${i}`, "v", subnets(i)));
    s.set("good/ns/a", vm("good", "a", "v", subnets(99)));
    assert.equal(s.find(lookup("hog", "v"), 10).unreadable, "share");
    assert.equal(ledger.usage("p", "hog"), 0);
    // The ledger gave back hog's whole charge: the store holds readable only what the ledger charges it (good's).
    assert.equal(s.heldBytes().readable, ledger.total());
  });

  it("charges the ledger exactly what the stores hold readable, over any writes, until retired (property)", () => {
    const write = fc.record({
      del: fc.boolean(),
      ws: fc.integer({ min: 0, max: 4 }),
      id: fc.integer({ min: 0, max: 15 }),
      names: fc.integer({ min: 0, max: 30 }),
    });
    fc.assert(
      fc.property(fc.array(write, { maxLength: 80 }), (writes) => {
        const ledger = new IndexLedger({ ceilingBytes: 20_000 });
        const a = new ReferenceStore([VPC, NICS], undefined, undefined, { ledger, author: "p" });
        const b = new ReferenceStore([VPC], undefined, undefined, { ledger, author: "p" });
        for (const w of writes) {
          const key = `w${w.ws}/ns/vm${w.id}`;
          // Some name nothing (an empty name is not kept): a demotion must make those unreadable too.
          const vpc = w.names % 3 === 0 ? "" : `v${w.id}`;
          const obj = vm(`w${w.ws}`, `vm${w.id}`, vpc, subnets(w.names).slice(0, w.names % 21));
          for (const s of [a, b])
            if (w.del) s.delete(key);
            else s.set(key, obj);
          assert.ok(ledger.total() <= 20_000);
          assert.equal(ledger.total(), a.heldBytes().readable + b.heldBytes().readable);
        }
        a.retire();
        b.retire();
        assert.equal(ledger.total(), 0);
      }),
      { numRuns: 200 },
    );
  });
});
