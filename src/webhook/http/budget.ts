// The bytes of request bodies held at once, shared fairly between the requests receiving one. A request's hold grows
// only as its bytes arrive (nothing is reserved for a declared length), and when the budget is full, a request that
// needs room takes it from the request holding the most, as long as that one would still hold more than the
// newcomer: so no upload keeps more than an equal share of the budget while another one needs it, however many
// connections a caller opens. kcp sends a review in one burst of a few KiB, so it always fits beside strangers'
// stalled megabytes, which are cut off instead (the caller's `preempt`). A body once in whole is no longer taken from:
// it waits for a review slot for a bounded time (pool.ts), then gives its bytes back.

/** One request's share of the budget. */
export interface BodyHold {
  /** Bytes held now. */
  readonly bytes: number;
  /** Counts `n` more bytes; false when they do not fit even after taking room from larger receiving requests. */
  take(n: number): boolean;
  /** The body is in whole: its bytes stay counted until release, and no other request may take them. */
  settle(): void;
  /** Gives every byte back; later calls do nothing. */
  release(): void;
}

interface Holder {
  bytes: number;
  receiving: boolean;
  released: boolean;
  preempt: () => void;
}

export class BodyBudget {
  readonly max: number;
  private total = 0;
  /** Requests still receiving, the ones room can be taken from. */
  private readonly receiving = new Set<Holder>();

  constructor(max: number) {
    this.max = max;
  }

  /** Bytes held now, over all requests. */
  get held(): number {
    return this.total;
  }

  /**
   * A new request's hold. `preempt` is called when another request takes this one's room: by then its bytes are
   * given back, and the request must be refused (and its connection closed: it is the one holding the most).
   */
  hold(preempt: () => void): BodyHold {
    const h: Holder = { bytes: 0, receiving: true, released: false, preempt };
    this.receiving.add(h);
    return {
      get bytes() {
        return h.bytes;
      },
      take: (n) => this.take(h, n),
      settle: () => void ((h.receiving = false), this.receiving.delete(h)),
      release: () => this.release(h),
    };
  }

  private take(h: Holder, n: number): boolean {
    if (h.released) return false;
    while (this.total + n > this.max) {
      const largest = this.largestBut(h);
      // Taking room from a request that would then hold no more than this one would only trade places.
      if (!largest || largest.bytes <= h.bytes + n) return false;
      this.release(largest);
      largest.preempt();
    }
    h.bytes += n;
    this.total += n;
    return true;
  }

  /** The receiving request holding the most bytes, other than `h`. Runs only when the budget is full. */
  private largestBut(h: Holder): Holder | undefined {
    let largest: Holder | undefined;
    for (const other of this.receiving) if (other !== h && other.bytes > (largest?.bytes ?? 0)) largest = other;
    return largest;
  }

  private release(h: Holder): void {
    if (h.released) return;
    h.released = true;
    this.receiving.delete(h);
    this.total -= h.bytes;
    h.bytes = 0;
  }
}
