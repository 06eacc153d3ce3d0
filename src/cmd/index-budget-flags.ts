// The index budget's flags (budget.ts says what each bounds) and the replica's index memory ceiling (ceiling.ts),
// kept here so the binary's flag list gains one line.
import { UsageError, type Flag } from "../cli/kit.ts";
import {
  DEFAULT_INDEX_BUDGET,
  DEFAULT_INDEX_MEMORY_LIMIT,
  type IndexBudget,
} from "../webhook/deletion/index/budget.ts";

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
    "heap bytes (the index's cost model) of one type one consumer workspace may have indexed; past it as above",
  ],
} as const satisfies Record<keyof IndexBudget, readonly [string, string, string]>;

const MEMORY_LIMIT = "index-memory-limit";

export function indexBudgetFlags(): Flag[] {
  const budget = (Object.keys(FLAGS) as (keyof IndexBudget)[]).map((k) => {
    const [name, env, help] = FLAGS[k];
    return { name, env, arg: "N", default: String(DEFAULT_INDEX_BUDGET[k]), help };
  });
  const limit: Flag = {
    name: MEMORY_LIMIT,
    env: "INDEX_MEMORY_LIMIT",
    arg: "BYTES",
    default: `${DEFAULT_INDEX_MEMORY_LIMIT / 2 ** 20}Mi`,
    help: "heap the readable index of this replica may hold (bytes, or with Ki, Mi, Gi), shared fairly between rule authors, then each author's consumer workspaces; one past its share gets 503 for its deletes of that author's types",
  };
  return [...budget, limit];
}

const UNITS: Record<string, number> = { "": 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** `--index-memory-limit`: whole bytes, or a whole number of Ki, Mi or Gi (as Kubernetes writes memory). */
function parseIndexMemoryLimit(v: Record<string, string | undefined>): { indexMemoryLimit: number } {
  const text = v[MEMORY_LIMIT] ?? `${DEFAULT_INDEX_MEMORY_LIMIT}`;
  const m = /^([1-9]\d{0,12})(Ki|Mi|Gi)?$/.exec(text);
  const bytes = m ? Number(m[1]) * UNITS[m[2] ?? ""]! : NaN;
  if (!(bytes >= 2 ** 20 && bytes <= 2 ** 40))
    throw new UsageError(`--${MEMORY_LIMIT}: want bytes from 1Mi to 1024Gi (e.g. 240Mi), got "${text}"`);
  return { indexMemoryLimit: bytes };
}

/**
 * `{ indexBudget }` when a budget flag differs from its default, else nothing (the config then says what it always
 * did), and the memory ceiling.
 */
export function parseIndexBudget(v: Record<string, string | undefined>): {
  indexBudget?: IndexBudget;
  indexMemoryLimit: number;
} {
  const out = { ...DEFAULT_INDEX_BUDGET };
  for (const k of Object.keys(FLAGS) as (keyof IndexBudget)[]) {
    const name = FLAGS[k][0];
    const text = v[name] ?? String(DEFAULT_INDEX_BUDGET[k]);
    if (!/^[1-9]\d{0,10}$/.test(text)) throw new UsageError(`--${name}: want a positive whole number, got "${text}"`);
    out[k] = Number(text);
  }
  const changed = (Object.keys(FLAGS) as (keyof IndexBudget)[]).some((k) => out[k] !== DEFAULT_INDEX_BUDGET[k]);
  return { ...(changed ? { indexBudget: out } : {}), ...parseIndexMemoryLimit(v) };
}
