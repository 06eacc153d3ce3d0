// deploy/rbac/dep-ctrl-bind.yaml, the operator's grant that lets providers bind the dep-ctrl export with their own
// credential, is the same grant the tests' providers give their consumers (tools/kcp/tenant.ts bindGrant): one model
// of "who may bind an export", so setupTopology and the tests that apply bindGrant(EXPORT_NAME) agree with the guide.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "../../tools/kcp/harness.ts";
import { EXPORT_NAME } from "../../tools/kcp/layout.ts";
import { bindGrant } from "../../tools/kcp/tenant.ts";

test("deploy/rbac/dep-ctrl-bind.yaml is bindGrant of the dep-ctrl export: bind on it, for system:authenticated", () => {
  const text = readFileSync(path.join(REPO_ROOT, "deploy/rbac/dep-ctrl-bind.yaml"), "utf8");
  const docs = parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((d) => d !== null);
  assert.deepEqual(docs, bindGrant(EXPORT_NAME));
});
