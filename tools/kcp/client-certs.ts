// Client certificates for callers of the webhook (kcp, and the strangers tests send), made with the openssl CLI.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface ClientCA {
  dir: string;
  /** PEM file of the CA certificate: what the webhook's client CA bundle holds. */
  caCert: string;
  caKey: string;
}

export interface ClientCert {
  cert: string;
  key: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** A CA for client certificates in `dir` (`<name>.crt`, `<name>.key`). */
export function makeClientCA(dir: string, name = "client-ca"): ClientCA {
  mkdirSync(dir, { recursive: true });
  openssl(
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-subj",
      `/CN=${name}`,
    ]),
    dir,
  );
  return { dir, caCert: path.join(dir, `${name}.crt`), caKey: path.join(dir, `${name}.key`) };
}

/** A client certificate (extendedKeyUsage clientAuth) signed by `ca`, with the given CN, organizations and DNS SANs. */
export function issueClientCert(
  ca: ClientCA,
  name: string,
  subject: { cn: string; o?: string[]; dns?: string[] },
): ClientCert {
  const dir = ca.dir;
  const subj = `/CN=${subject.cn}${(subject.o ?? []).map((o) => `/O=${o}`).join("")}`;
  openssl(
    ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subj,
    ]),
    dir,
  );
  // extendedKeyUsage clientAuth always, so the extension file is never empty.
  const ext = [
    "extendedKeyUsage=clientAuth",
    ...(subject.dns?.length ? [`subjectAltName=${subject.dns.map((d) => `DNS:${d}`).join(",")}`] : []),
  ];
  writeFileSync(path.join(dir, `${name}.ext`), ext.join("\n") + "\n");
  openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      ca.caCert,
      "-CAkey",
      ca.caKey,
      "-CAcreateserial",
      "-days",
      "2",
    ].concat(["-out", `${name}.crt`, "-extfile", `${name}.ext`]),
    dir,
  );
  return { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
}
