// Bounded concurrency: many requests against one server, a few in flight at a time, so a large batch queues instead
// of storming it. The plugin's dry runs and deletes and the webhook's read-access probe run through it.

/**
 * Runs `fn` over `items`, at most `limit` at a time (at least one), and answers in the items' order. A worker takes
 * the next item as soon as its last one is done, so one slow answer holds up one slot, not a whole batch.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
