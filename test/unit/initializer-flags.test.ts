// The controller's provider-initializer flags: --provider-workspace-type names a type as <workspace path>:<name> and
// comes with --webhook-user; bad values are one-line usage errors, not a crash at the first pass.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseConfig } from "../../src/cmd/controller.ts";
import { UsageError } from "../../src/cli/args.ts";

const base = ["--webhook-url=https://webhook.example:9443"];

describe("controller flags: provider workspace initializer", () => {
  it("is off unless --provider-workspace-type is given", () => {
    const c = parseConfig(base, {});
    assert.ok(c !== "help" && c.providerWorkspaceType === undefined);
  });

  it("splits the type into its workspace path and name", () => {
    const c = parseConfig(
      [...base, "--provider-workspace-type=root:platform:dependency-provider", "--webhook-user=hook"],
      {},
    );
    assert.ok(c !== "help");
    assert.deepEqual(c.providerWorkspaceType, { path: "root:platform", name: "dependency-provider" });
    assert.equal(c.webhookUser, "hook");
  });

  it("refuses a type without a path, a bad name, or no webhook user", () => {
    for (const bad of ["dependency-provider", "root:Bad_Name", "org:x", "root:"])
      assert.throws(
        () => parseConfig([...base, `--provider-workspace-type=${bad}`, "--webhook-user=hook"], {}),
        (err: unknown) =>
          err instanceof UsageError && /--provider-workspace-type: want <workspace path>:<name>/.test(err.message),
        bad,
      );
    assert.throws(
      () => parseConfig([...base, "--provider-workspace-type=root:dependency-provider"], {}),
      /needs --webhook-user/,
    );
  });
});
