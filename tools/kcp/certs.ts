// A throwaway CA and serving certificates for the webhook, made with the openssl CLI (Node has no X.509 writer).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface CertFiles {
  dir: string;
  caCert: string;
  cert: string;
  key: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Creates `<dir>/ca.crt`, and `tls.crt`/`tls.key` for the given IP and DNS names, signed by that CA. */
export function makeCerts(dir: string, opts: { ips?: string[]; dns?: string[]; days?: number } = {}): CertFiles {
  mkdirSync(dir, { recursive: true });
  openssl(
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"].concat([
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-subj",
      "/CN=kcp-dependency-controller test CA",
    ]),
    dir,
  );
  issueServingCert(dir, opts);
  return { dir, caCert: path.join(dir, "ca.crt"), cert: path.join(dir, "tls.crt"), key: path.join(dir, "tls.key") };
}

/** (Re)issues tls.crt/tls.key from the CA in `dir`; written via rename so a watcher never sees half a file. */
export function issueServingCert(dir: string, opts: { ips?: string[]; dns?: string[]; days?: number } = {}): string {
  const sans = [
    ...(opts.ips ?? ["127.0.0.1"]).map((ip) => `IP:${ip}`),
    ...(opts.dns ?? ["localhost"]).map((d) => `DNS:${d}`),
  ];
  writeFileSync(path.join(dir, "ext.cnf"), `subjectAltName=${sans.join(",")}\nextendedKeyUsage=serverAuth\n`);
  openssl(
    [
      "req",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      "next.key",
      "-out",
      "next.csr",
    ].concat(["-subj", "/CN=kcp-dependency-webhook"]),
    dir,
  );
  openssl(
    [
      "x509",
      "-req",
      "-in",
      "next.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "next.crt",
    ].concat(["-days", String(opts.days ?? 2), "-extfile", "ext.cnf"]),
    dir,
  );
  renameSync(path.join(dir, "next.key"), path.join(dir, "tls.key"));
  renameSync(path.join(dir, "next.crt"), path.join(dir, "tls.crt"));
  return readFileSync(path.join(dir, "tls.crt"), "utf8");
}
