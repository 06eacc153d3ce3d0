// The per-replica ceiling on what the dependents index holds readable, shared fairly between rule authors and, within
// an author's share, between consumer workspaces. Every ReferenceStore of every type and endpoint (shard) charges one
// IndexLedger with the heap bytes each readable dependent costs (budget.ts, INDEX_COST). A per-workspace budget
// (budget.ts) stops one workspace; this stops one tenant with several workspaces, or an author with many types or
// many consumers, from taking the replica past its memory limit or from taking room others are owed.
//
// The author of a dependent type is the workspace of the rules that make it indexed: a rule's dependent is a resource
// of an APIExport in the rule's own workspace (contribution.ts), so every store has exactly one author. A "holder" is
// one consumer workspace under one author: what the stores of that author's types keep of that workspace.
//
// Fairness is hierarchical max-min. While there is room, anyone may use it. Once the ceiling is reached, a holder
// within its share may still take room: the ceiling split equally between the authors holding anything, each
// author's part split equally between its holders (both counting the newcomer). Room is taken from a holder past its
// share: from the holder's own author when that author is past its part (then another of its holders holds more than
// its share), otherwise from the author holding the most (past its part, or everything would fit), within it its
// largest holder (past its share, as the largest of an author past its part). Taking "demotes" the holder in one
// store: its dependents of that type on that endpoint are kept unreadable (key only), so its own deletes of that type
// get the documented 503 and nobody else's. A holder past its share with no room left is refused the same way, one
// dependent at a time. No holder within its share is ever refused or demoted (test/unit/index-ceiling.test.ts).
//
// Unreadable dependents are not charged: their keys must be kept to fail closed, so they cannot be refused; what
// one costs (INDEX_COST.unreadable) is bounded by the objects kcp lets a workspace hold, not by this ceiling.

/** A store holding charged dependents of one author's type: `demote` makes every readable one of `workspace` unread. */
export interface LedgerAccount {
  /** The workspace of the rules whose dependent type this store indexes (the type's APIExport's workspace). */
  readonly author: string;
  demote(workspace: string): void;
}

export interface IndexLedgerOptions {
  /** Heap bytes the readable index may hold over all types and endpoints of this replica (INDEX_COST's model). */
  ceilingBytes: number;
}

/** One consumer workspace under one author: its charge per store. */
interface Holder {
  bytes: number;
  accounts: Map<LedgerAccount, number>;
}

/** One author: its holders, only those charged something (so their count is the number sharing its part). */
interface Author {
  bytes: number;
  holders: Map<string, Holder>;
}

export class IndexLedger {
  readonly ceilingBytes: number;
  /** Times a holder was demoted in one store to make room for one within its share, since the start. */
  demotions = 0;
  /** Authors and holders looked at to find whom to demote, since the start (the cost of a full ceiling, for tests). */
  scanned = 0;
  private totalBytes = 0;
  /** Only authors charged something: the number of entries is the number sharing the ceiling. */
  private readonly authors = new Map<string, Author>();

  constructor(opts: IndexLedgerOptions) {
    this.ceilingBytes = opts.ceilingBytes;
  }

  /** Bytes charged now, over every author, workspace and store. */
  total(): number {
    return this.totalBytes;
  }

  /** Bytes charged now to `workspace` under `author`, or to all of `author`'s holders when no workspace is given. */
  usage(author: string, workspace?: string): number {
    const a = this.authors.get(author);
    return (workspace === undefined ? a?.bytes : a?.holders.get(workspace)?.bytes) ?? 0;
  }

  /** Authors charged anything now. */
  authorCount(): number {
    return this.authors.size;
  }

  /** `author`'s part: the ceiling over the authors charged anything, counting `author` itself. */
  authorShare(author: string): number {
    return this.ceilingBytes / (this.authors.size + (this.authors.has(author) ? 0 : 1));
  }

  /** `workspace`'s share under `author`: the author's part over its holders, counting `workspace` itself. */
  share(author: string, workspace: string): number {
    const holders = this.authors.get(author)?.holders;
    return this.authorShare(author) / ((holders?.size ?? 0) + (holders?.has(workspace) ? 0 : 1));
  }

  /**
   * Charges `bytes` of `workspace` to `account` if they fit: in the room left, or, for a holder that stays within its
   * share, in room taken from holders past theirs (demoted). False: not charged; keep the dependent unreadable.
   */
  admit(account: LedgerAccount, workspace: string, bytes: number): boolean {
    const author = account.author;
    // Entered (with nothing) first, so that every share below counts the newcomer, as `share` does for it.
    const h = this.holder(author, workspace);
    if (this.totalBytes + bytes > this.ceilingBytes) {
      const fits = h.bytes + bytes <= this.share(author, workspace) && this.makeRoom(author, workspace, bytes);
      if (!fits) {
        this.forgetEmpty(author, workspace);
        return false;
      }
    }
    h.bytes += bytes;
    this.authors.get(author)!.bytes += bytes;
    h.accounts.set(account, (h.accounts.get(account) ?? 0) + bytes);
    this.totalBytes += bytes;
    return true;
  }

  private holder(author: string, workspace: string): Holder {
    let a = this.authors.get(author);
    if (!a) this.authors.set(author, (a = { bytes: 0, holders: new Map() }));
    let h = a.holders.get(workspace);
    if (!h) a.holders.set(workspace, (h = { bytes: 0, accounts: new Map() }));
    return h;
  }

  /** Gives back what `admit` charged (a readable dependent removed, replaced or made unreadable). */
  release(account: LedgerAccount, workspace: string, bytes: number): void {
    const h = this.authors.get(account.author)?.holders.get(workspace);
    const had = h?.accounts.get(account);
    if (!h || had === undefined) return; // demoted meanwhile: its charge went with it
    const back = Math.min(bytes, had);
    if (had - back <= 0) h.accounts.delete(account);
    else h.accounts.set(account, had - back);
    this.take(account.author, workspace, back);
  }

  /** Forgets every charge of `account` (a store replaced by a relist, or no longer watched). */
  retire(account: LedgerAccount): void {
    const a = this.authors.get(account.author);
    if (!a) return;
    for (const [workspace, h] of [...a.holders]) {
      const had = h.accounts.get(account);
      if (had === undefined) continue;
      h.accounts.delete(account);
      this.take(account.author, workspace, had);
    }
  }

  /** Takes `bytes` off a holder, its author and the total. */
  private take(author: string, workspace: string, bytes: number): void {
    const a = this.authors.get(author)!;
    a.holders.get(workspace)!.bytes -= bytes;
    a.bytes -= bytes;
    this.totalBytes -= bytes;
    this.forgetEmpty(author, workspace);
  }

  /** Forgets a holder charged in no store, and an author left with no holder: they no longer share the ceiling. */
  private forgetEmpty(author: string, workspace: string): void {
    const a = this.authors.get(author)!;
    if (a.holders.get(workspace)!.accounts.size === 0) a.holders.delete(workspace);
    if (a.holders.size === 0) this.authors.delete(author);
  }

  /** Demotes holders past their share, one store at a time, until `bytes` of `workspace` under `author` fit. */
  private makeRoom(author: string, workspace: string, bytes: number): boolean {
    while (this.totalBytes + bytes > this.ceilingBytes) {
      const victim = this.victim(author, workspace, bytes);
      // Cannot happen while the holder stays within its share (see the top); kept so a bug refuses, never overfills.
      if (!victim || victim.holder.bytes <= this.share(victim.author, victim.workspace)) return false;
      const { holder, workspace: name } = victim;
      let account: LedgerAccount | undefined;
      let most = -1;
      for (const [acc, b] of holder.accounts) if (b > most) [account, most] = [acc, b];
      holder.accounts.delete(account!);
      this.take(victim.author, name, most);
      this.demotions++;
      account!.demote(name);
    }
    return true;
  }

  /**
   * Whom to demote for `bytes` of `workspace` under `author`: the largest other holder of the same author when the
   * author would pass its part, else the largest holder of the largest other author. Runs only when the ceiling is
   * reached; looks at the authors and one author's holders, never at every holder.
   */
  private victim(
    author: string,
    workspace: string,
    bytes: number,
  ): { author: string; workspace: string; holder: Holder } | undefined {
    let from = author;
    if (this.usage(author) + bytes <= this.authorShare(author)) {
      let best: [string, Author] | undefined;
      for (const e of this.authors) {
        this.scanned++;
        if (e[0] !== author && (!best || e[1].bytes > best[1].bytes)) best = e;
      }
      if (!best) return undefined;
      from = best[0];
    }
    let largest: [string, Holder] | undefined;
    for (const e of this.authors.get(from)?.holders ?? []) {
      this.scanned++;
      if ((from !== author || e[0] !== workspace) && (!largest || e[1].bytes > largest[1].bytes)) largest = e;
    }
    return largest && { author: from, workspace: largest[0], holder: largest[1] };
  }
}
