// The per-replica ceiling on what the dependents index holds readable, shared fairly between consumer workspaces.
// Every ReferenceStore of every type and endpoint (shard) charges one IndexLedger with the heap bytes each readable
// dependent costs (cost.ts). A per-workspace budget (budget.ts) stops one workspace; this stops one tenant with
// several workspaces, or several types, from taking the replica past its memory limit.
//
// Fairness is max-min: while there is room, anyone may use it; once the ceiling is reached, a workspace at or under
// its share (the ceiling divided by the workspaces holding anything) still gets room, taken from the workspace
// holding the most, which is then over its share (if everyone else were at most at their share, the total plus the
// newcomer would fit). The taking "demotes" that workspace in one store: its dependents of that type on that
// endpoint are kept unreadable (key only), so its own deletes of that type get the documented 503 and nobody
// else's. A workspace past its share with no room left is refused the same way, one dependent at a time.
//
// Unreadable dependents are not charged: their keys must be kept to fail closed, so they cannot be refused; what
// one costs (cost.ts, UNREADABLE) is bounded by the objects kcp lets a workspace hold, not by this ceiling.

/** A store holding charged dependents: `demote` makes every readable dependent of `tenant` in it unreadable. */
export interface LedgerAccount {
  demote(tenant: string): void;
}

export interface IndexLedgerOptions {
  /** Heap bytes the readable index may hold over all types and endpoints of this replica (cost.ts's model). */
  ceilingBytes: number;
}

interface Tenant {
  bytes: number;
  accounts: Map<LedgerAccount, number>;
}

export class IndexLedger {
  readonly ceilingBytes: number;
  /** Times a workspace was demoted in one store to make room for one under its share, since the start. */
  demotions = 0;
  private totalBytes = 0;
  /** Only workspaces charged something (bytes > 0): the number of entries is the number sharing the ceiling. */
  private readonly tenants = new Map<string, Tenant>();

  constructor(opts: IndexLedgerOptions) {
    this.ceilingBytes = opts.ceilingBytes;
  }

  /** Bytes charged now, over every workspace and store. */
  total(): number {
    return this.totalBytes;
  }

  /** Bytes charged to `tenant` now, over every store. */
  usage(tenant: string): number {
    return this.tenants.get(tenant)?.bytes ?? 0;
  }

  /** Workspaces charged anything now. */
  tenantCount(): number {
    return this.tenants.size;
  }

  /** `tenant`'s share: the ceiling over the workspaces charged anything, counting `tenant` itself. */
  share(tenant: string): number {
    return this.ceilingBytes / (this.tenants.size + (this.tenants.has(tenant) ? 0 : 1));
  }

  /**
   * Charges `bytes` of `tenant` to `account` if they fit: in the room left, or, for a workspace that stays within
   * its share, in room taken from workspaces over theirs (demoted). False: not charged; keep the dependent unreadable.
   */
  admit(account: LedgerAccount, tenant: string, bytes: number): boolean {
    if (this.totalBytes + bytes > this.ceilingBytes) {
      if (this.usage(tenant) + bytes > this.share(tenant)) return false;
      if (!this.makeRoom(tenant, bytes)) return false;
    }
    let t = this.tenants.get(tenant);
    if (!t) this.tenants.set(tenant, (t = { bytes: 0, accounts: new Map() }));
    t.bytes += bytes;
    t.accounts.set(account, (t.accounts.get(account) ?? 0) + bytes);
    this.totalBytes += bytes;
    return true;
  }

  /** Gives back what `admit` charged (a readable dependent removed, replaced or made unreadable). */
  release(account: LedgerAccount, tenant: string, bytes: number): void {
    const t = this.tenants.get(tenant);
    const had = t?.accounts.get(account);
    if (!t || had === undefined) return; // demoted meanwhile: its charge went with it
    const back = Math.min(bytes, had);
    if (had - back <= 0) t.accounts.delete(account);
    else t.accounts.set(account, had - back);
    this.take(tenant, t, back);
  }

  /** Forgets every charge of `account` (a store replaced by a relist, or no longer watched). */
  retire(account: LedgerAccount): void {
    for (const [name, t] of [...this.tenants]) {
      const had = t.accounts.get(account);
      if (had === undefined) continue;
      t.accounts.delete(account);
      this.take(name, t, had);
    }
  }

  private take(name: string, t: Tenant, bytes: number): void {
    t.bytes -= bytes;
    this.totalBytes -= bytes;
    if (t.accounts.size === 0) this.tenants.delete(name);
  }

  /** Demotes the workspaces over their share, largest first, until `bytes` of `tenant` fit. */
  private makeRoom(tenant: string, bytes: number): boolean {
    while (this.totalBytes + bytes > this.ceilingBytes) {
      const victim = this.largestOther(tenant);
      // Cannot happen while `tenant` stays within its share (see the top); kept so a bug refuses, never overfills.
      if (!victim || victim[1].bytes <= this.share(tenant)) return false;
      const [name, t] = victim;
      let account: LedgerAccount | undefined;
      let most = -1;
      for (const [a, b] of t.accounts) if (b > most) [account, most] = [a, b];
      t.accounts.delete(account!);
      this.take(name, t, most);
      this.demotions++;
      account!.demote(name);
    }
    return true;
  }

  /** The workspace charged the most, other than `tenant`. Runs only when the ceiling is reached. */
  private largestOther(tenant: string): [string, Tenant] | undefined {
    let best: [string, Tenant] | undefined;
    for (const e of this.tenants) if (e[0] !== tenant && (!best || e[1].bytes > best[1].bytes)) best = e;
    return best;
  }
}
