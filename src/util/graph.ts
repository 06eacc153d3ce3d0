// Strongly connected components of a directed graph (Tarjan, iterative, so a long chain cannot overflow the stack):
// the cycle detection both the controller (rule cycles) and the kubectl plugin (object and type graphs) use.

/** node → component id. Nodes are visited in the order given, so ids are stable for a stable order. */
export function stronglyConnected(
  nodes: readonly string[],
  adj: ReadonlyMap<string, readonly string[]>,
): Map<string, number> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const comp = new Map<string, number>();
  let next = 0;
  let ids = 0;
  const enter = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
  };
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { v: string; i: number }[] = [{ v: root, i: 0 }];
    enter(root);
    while (work.length > 0) {
      const frame = work.at(-1)!;
      const out = adj.get(frame.v) ?? [];
      if (frame.i < out.length) {
        const w = out[frame.i++]!;
        if (!index.has(w)) {
          enter(w);
          work.push({ v: w, i: 0 });
        } else if (onStack.has(w)) low.set(frame.v, Math.min(low.get(frame.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low.set(parent.v, Math.min(low.get(parent.v)!, low.get(frame.v)!));
      if (low.get(frame.v) === index.get(frame.v)) {
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.set(w, ids);
        } while (w !== frame.v);
        ids++;
      }
    }
  }
  return comp;
}
