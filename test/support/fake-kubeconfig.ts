// A kubeconfig for the plugin's unit tests, pointing at a local fake kcp over plain http (token "t"), written into a
// fresh temporary directory; `remove` deletes it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function writeFakeKubeconfig(
  prefix: string,
  server: string,
  namespace?: string,
): { kubeconfig: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "kcp", cluster: { server } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "c", context: { cluster: "kcp", user: "u", ...(namespace ? { namespace } : {}) } }],
      "current-context": "c",
    }),
  );
  return { kubeconfig, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
