// The CA bundle kcp uses to verify the webhook: read from a file on every pass, so a rotated file reaches every
// webhook configuration without a restart; a file that is half-written during rotation keeps the last good bundle.
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConfigError } from "../kcp/kubeconfig.ts";

/** Reads the PEM bundle and returns it base64-encoded, as a VWC's caBundle wants; throws a one-line error. */
export function readCaBundle(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(
      `cannot read webhook CA bundle ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError(`webhook CA bundle ${file} holds no PEM certificate`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new ConfigError(`webhook CA bundle ${file} holds an unreadable certificate: ${(err as Error).message}`);
    }
  }
  return Buffer.from(pem).toString("base64");
}

export class CaBundleFile {
  private readonly file: string;
  private last: string;
  private readonly onError: (err: Error) => void;

  /** Reads the file once now: a bundle that is wrong at startup is a startup error. */
  constructor(file: string, onError: (err: Error) => void) {
    this.file = file;
    this.onError = onError;
    this.last = readCaBundle(file);
  }

  current(): string {
    try {
      this.last = readCaBundle(this.file);
    } catch (err) {
      this.onError(err as Error);
    }
    return this.last;
  }
}
