// --max-rules-per-workspace, on the webhook and the controller alike (src/api/rule-cap.ts says what it decides; both
// binaries must be given the same value, which the chart does from one value).
import { UsageError, type Flag } from "../cli/kit.ts";
import { DEFAULT_MAX_RULES_PER_WORKSPACE } from "../api/rule-cap.ts";

export const MAX_RULES_FLAG: Flag = {
  name: "max-rules-per-workspace",
  env: "MAX_RULES_PER_WORKSPACE",
  arg: "N",
  default: String(DEFAULT_MAX_RULES_PER_WORKSPACE),
  help: "DependencyRules one workspace may have enforced: one more is refused at apply, and past it (the oldest win) a rule protects nothing and says so on its status; give the webhook and the controller the same value",
};

export function parseMaxRules(v: Record<string, string | undefined>): { maxRulesPerWorkspace: number } {
  const text = v[MAX_RULES_FLAG.name] ?? MAX_RULES_FLAG.default!;
  if (!/^[1-9]\d{0,8}$/.test(text))
    throw new UsageError(`--${MAX_RULES_FLAG.name}: want a positive whole number, got "${text}"`);
  return { maxRulesPerWorkspace: Number(text) };
}
