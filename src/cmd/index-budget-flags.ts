// The index budget's flags (budget.ts says what each bounds), kept here so the binary's flag list gains one line.
import { UsageError, type Flag } from "../cli/kit.ts";
import { DEFAULT_INDEX_BUDGET, type IndexBudget } from "../webhook/deletion/index/budget.ts";

const FLAGS = {
  maxNamesPerObject: [
    "index-max-names-per-object",
    "INDEX_MAX_NAMES_PER_OBJECT",
    "distinct names one dependent may reference before the index keeps it unread (its workspace's deletes of its type get 503)",
  ],
  maxObjectsPerWorkspace: [
    "index-max-objects-per-workspace",
    "INDEX_MAX_OBJECTS_PER_WORKSPACE",
    "dependents of one type one consumer workspace may have indexed; past it that workspace's deletes of the type get 503",
  ],
  maxBytesPerWorkspace: [
    "index-max-bytes-per-workspace",
    "INDEX_MAX_BYTES_PER_WORKSPACE",
    "characters of keys and names of one type one consumer workspace may have indexed; past it as above",
  ],
} as const satisfies Record<keyof IndexBudget, readonly [string, string, string]>;

export function indexBudgetFlags(): Flag[] {
  return (Object.keys(FLAGS) as (keyof IndexBudget)[]).map((k) => {
    const [name, env, help] = FLAGS[k];
    return { name, env, arg: "N", default: String(DEFAULT_INDEX_BUDGET[k]), help };
  });
}

/** `{ indexBudget }` when a flag differs from its default, else nothing (the config then says what it always did). */
export function parseIndexBudget(v: Record<string, string | undefined>): { indexBudget?: IndexBudget } {
  const out = { ...DEFAULT_INDEX_BUDGET };
  for (const k of Object.keys(FLAGS) as (keyof IndexBudget)[]) {
    const name = FLAGS[k][0];
    const text = v[name] ?? String(DEFAULT_INDEX_BUDGET[k]);
    if (!/^[1-9]\d{0,10}$/.test(text)) throw new UsageError(`--${name}: want a positive whole number, got "${text}"`);
    out[k] = Number(text);
  }
  const changed = (Object.keys(FLAGS) as (keyof IndexBudget)[]).some((k) => out[k] !== DEFAULT_INDEX_BUDGET[k]);
  return changed ? { indexBudget: out } : {};
}
