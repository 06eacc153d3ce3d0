// A map with a size cap that forgets the least recently used key first. A Map iterates in insertion order, so
// moving a key to the end on use (delete, then set) keeps the least recently used one first: every operation,
// eviction included, is a constant number of Map operations, whatever the size.

export class Lru<K, V> {
  private readonly map = new Map<K, V>();
  private readonly cap: number;

  /** `cap`: the most keys kept (at least 1). */
  constructor(cap: number) {
    if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`an LRU cap must be a positive integer, got ${cap}`);
    this.cap = cap;
  }

  get size(): number {
    return this.map.size;
  }

  /** The value, marking the key as just used. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** Stores the value as just used; past the cap, the least recently used key goes. */
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.cap) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** Every key and value, least recently used first, without marking any as used. */
  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
}
