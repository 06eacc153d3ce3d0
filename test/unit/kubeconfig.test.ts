// The kubeconfig reader: kubectl's rules for files, contexts and credentials, without client-node.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { ConfigError, kubeconfigFiles, readKubeconfig } from "../../src/kcp/kubeconfig-file.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "kubeconfig-test-"));
function write(name: string, doc: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof doc === "string" ? doc : stringify(doc));
  return file;
}
const config = (o: {
  current?: string;
  clusters?: [string, Record<string, unknown>][];
  users?: [string, Record<string, unknown>][];
  contexts?: [string, Record<string, unknown>][];
}) => ({
  apiVersion: "v1",
  kind: "Config",
  ...(o.current ? { "current-context": o.current } : {}),
  clusters: (o.clusters ?? []).map(([name, cluster]) => ({ name, cluster })),
  users: (o.users ?? []).map(([name, user]) => ({ name, user })),
  contexts: (o.contexts ?? []).map(([name, context]) => ({ name, context })),
});

/** A kubeconfig whose one user runs `sh script` as its exec credential plugin. */
const execKubeconfig = (name: string, script: string): string =>
  write(
    name,
    config({
      current: "c",
      clusters: [["k", { server: "https://k" }]],
      users: [
        [
          "u",
          {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: "sh",
              args: [script],
              interactiveMode: "Never",
            },
          },
        ],
      ],
      contexts: [["c", { cluster: "k", user: "u" }]],
    }),
  );

describe("readKubeconfig", () => {
  it("takes the current context's server, namespace, token and inline CA", async () => {
    const file = write(
      "a.yaml",
      config({
        current: "dev",
        clusters: [["kcp", { server: "https://kcp:6443/clusters/root:x", "certificate-authority-data": "Q0E=" }]],
        users: [["me", { token: "t0k3n" }]],
        contexts: [["dev", { cluster: "kcp", user: "me", namespace: "team" }]],
      }),
    );
    const kc = readKubeconfig({ kubeconfig: file });
    assert.equal(kc.server, "https://kcp:6443/clusters/root:x");
    assert.equal(kc.namespace, "team");
    assert.equal(kc.credentials.ca?.toString(), "CA");
    assert.deepEqual(await kc.credentials.headers(), { authorization: "Bearer t0k3n" });
  });

  it("reads files relative to the kubeconfig, and a token file again on every request", async () => {
    write("ca.pem", "PEM");
    const tokenFile = write("token", "first\n");
    const file = write(
      "b.yaml",
      config({
        current: "c",
        clusters: [["k", { server: "https://k", "certificate-authority": "ca.pem", "insecure-skip-tls-verify": true }]],
        users: [["u", { tokenFile: "token" }]],
        contexts: [["c", { cluster: "k", user: "u" }]],
      }),
    );
    const kc = readKubeconfig({ kubeconfig: file });
    assert.equal(kc.credentials.ca?.toString(), "PEM");
    assert.equal(kc.credentials.insecureSkipTLSVerify, true);
    assert.deepEqual(await kc.credentials.headers(), { authorization: "Bearer first" });
    writeFileSync(tokenFile, "rotated");
    assert.deepEqual(await kc.credentials.headers(), { authorization: "Bearer rotated" });
  });

  it("picks a named context; basic auth; client certificates", async () => {
    const file = write(
      "c.yaml",
      config({
        current: "one",
        clusters: [["k", { server: "https://k" }]],
        users: [
          ["basic", { username: "u", password: "p" }],
          ["cert", { "client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ" }],
        ],
        contexts: [
          ["one", { cluster: "k", user: "basic" }],
          ["two", { cluster: "k", user: "cert" }],
        ],
      }),
    );
    assert.deepEqual(await readKubeconfig({ kubeconfig: file }).credentials.headers(), {
      authorization: `Basic ${Buffer.from("u:p").toString("base64")}`,
    });
    const two = readKubeconfig({ kubeconfig: file, context: "two" });
    assert.equal(two.credentials.cert?.toString(), "CERT");
    assert.equal(two.credentials.key?.toString(), "KEY");
    assert.deepEqual(await two.credentials.headers(), {});
  });

  it("merges $KUBECONFIG's files: the first definition and the first current-context win", () => {
    const first = write(
      "first.yaml",
      config({ clusters: [["k", { server: "https://first" }]], contexts: [["c", { cluster: "k" }]] }),
    );
    const second = write(
      "second.yaml",
      config({ current: "c", clusters: [["k", { server: "https://second" }]], contexts: [["c", { cluster: "x" }]] }),
    );
    const files = kubeconfigFiles(undefined, {
      KUBECONFIG: [first, path.join(dir, "missing"), second].join(path.delimiter),
    });
    assert.equal(files.length, 3);
    const saved = process.env["KUBECONFIG"];
    process.env["KUBECONFIG"] = files.join(path.delimiter);
    try {
      assert.equal(readKubeconfig({}).server, "https://first");
    } finally {
      if (saved === undefined) delete process.env["KUBECONFIG"];
      else process.env["KUBECONFIG"] = saved;
    }
  });

  it("says what is wrong: a missing file, no such context, no server", () => {
    assert.throws(
      () => readKubeconfig({ kubeconfig: path.join(dir, "nope") }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /cannot load kubeconfig .*nope: ENOENT/);
        return true;
      },
    );
    const file = write("d.yaml", config({ current: "c", contexts: [["c", { cluster: "none" }]] }));
    assert.throws(() => readKubeconfig({ kubeconfig: file, context: "other" }), /has no context "other"/);
    assert.throws(() => readKubeconfig({ kubeconfig: file }), /has no current cluster/);
    assert.throws(() => readKubeconfig({ kubeconfig: write("e.yaml", "clusters: [") }), /cannot load kubeconfig/);
  });

  it("runs an exec credential plugin (through client-node, loaded only for it)", async () => {
    const script = write(
      "cred.sh",
      '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}\'\n',
    );
    const file = execKubeconfig("f.yaml", script);
    assert.deepEqual(await readKubeconfig({ kubeconfig: file }).credentials.headers(), {
      authorization: "Bearer from-exec",
    });
  });
});

describe("readKubeconfig: an exec plugin that answers with a client certificate", () => {
  it("keeps the certificate and key (ExecCredential clientCertificateData/clientKeyData) for the TLS handshake", async () => {
    const cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const key = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
    const credential = {
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { clientCertificateData: cert, clientKeyData: key },
    };
    const script = write("cert-cred.sh", `#!/bin/sh\nprintf '%s\\n' '${JSON.stringify(credential)}'\n`);
    const file = execKubeconfig("g.yaml", script);
    const credentials = readKubeconfig({ kubeconfig: file }).credentials;
    const tls = await credentials.clientCertificate?.();
    assert.equal(String(tls?.cert), cert);
    assert.equal(String(tls?.key), key);
    assert.equal((await credentials.headers())["authorization"], undefined);
  });
});
