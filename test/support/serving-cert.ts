// A self-signed serving certificate for the webhook's HTTPS server in unit tests (IP SAN 127.0.0.1), made before the
// file's tests and removed after them, and the DELETE review those tests send.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";

export interface ServingCert {
  /** The certificate's PEM, to trust as the CA. */
  readonly ca: string;
  readonly files: { certFile: string; keyFile: string };
}

export function servingCertSuite(prefix: string): ServingCert {
  let dir = "";
  const cert = { ca: "", files: { certFile: "", keyFile: "" } };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    cert.files = { certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") };
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", cert.files.keyFile, "-out", cert.files.certFile, "-days", "1", "-subj", "/CN=serving",
      "-addext", "subjectAltName=IP:127.0.0.1",
    ], { stdio: "ignore" }); // prettier-ignore
    cert.ca = readFileSync(cert.files.certFile, "utf8");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  return cert;
}

/** A DELETE review of vpcs/my-vpc with `uid`. */
export const deleteReview = (uid: string): string =>
  JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      operation: "DELETE",
      resource: { group: "network.example.io", version: "v1", resource: "vpcs" },
      name: "my-vpc",
      oldObject: { metadata: { name: "my-vpc" } },
    },
  });
