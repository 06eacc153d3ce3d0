// The serving certificate and key (and the client CA bundle, when callers must present a certificate), read from
// files and reloaded when they change, so a rotated certificate
// (cert-manager, a Secret volume's symlink swap) is served without a restart. File events trigger a check; a
// periodic poll catches what events miss. A half-written or mismatched pair is refused and the old one kept.
import { X509Certificate } from "node:crypto";
import { readFileSync, watch, type FSWatcher } from "node:fs";
import { dirname } from "node:path";
import tls from "node:tls";
import type { Logger } from "pino";
import { realClock, type Clock, type Timer } from "../../util/clock.ts";

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** PEM bundle of the CAs that sign callers' client certificates; reloaded with the pair. */
  clientCAFile?: string;
}

export interface KeyPair {
  cert: Buffer;
  key: Buffer;
  /** The client CA bundle, when `clientCAFile` is set. */
  ca?: Buffer;
}

export class CertificateError extends Error {
  override name = "CertificateError";
}

/** Reads and checks a key pair; the error says which file is wrong and why. */
export function loadKeyPair(files: TlsFiles): KeyPair {
  const read = (what: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new CertificateError(
        code === "ENOENT"
          ? `TLS ${what} file ${file} does not exist`
          : `cannot read TLS ${what} file ${file}: ${(err as Error).message}`,
      );
    }
  };
  const pair: KeyPair = { cert: read("certificate", files.certFile), key: read("key", files.keyFile) };
  try {
    tls.createSecureContext(pair);
  } catch (err) {
    throw new CertificateError(
      `TLS certificate ${files.certFile} and key ${files.keyFile} are not a usable pair: ${(err as Error).message}`,
    );
  }
  if (files.clientCAFile !== undefined) {
    const ca = read("client CA", files.clientCAFile);
    // An empty or garbled bundle would make every caller fail verification: refuse it and keep the old one.
    if (!/-----BEGIN CERTIFICATE-----/.test(ca.toString("latin1"))) {
      throw new CertificateError(`TLS client CA file ${files.clientCAFile} holds no PEM certificate`);
    }
    try {
      tls.createSecureContext({ ca });
      new X509Certificate(ca);
    } catch (err) {
      throw new CertificateError(`TLS client CA file ${files.clientCAFile} is not usable: ${(err as Error).message}`);
    }
    pair.ca = ca;
  }
  return pair;
}

export interface CertificateReloaderOptions {
  files: TlsFiles;
  logger: Logger;
  /** Called with each new valid pair. */
  onReload: (pair: KeyPair) => void;
  onResult?: (result: "success" | "error") => void;
  pollMs?: number;
  /** Times the poll and the wait after a file event (default the real clock). */
  clock?: Clock;
}

export class CertificateReloader {
  private readonly opts: CertificateReloaderOptions;
  private current: KeyPair;
  private watchers: FSWatcher[] = [];
  private readonly clock: Clock;
  private poll: Timer | undefined;
  private debounce: Timer | undefined;
  private lastError = "";

  /** Loads the pair now; throws CertificateError when it is missing or unusable. */
  constructor(opts: CertificateReloaderOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.current = loadKeyPair(opts.files);
  }

  pair(): KeyPair {
    return this.current;
  }

  start(): void {
    // Watch the directories: Secret volumes replace files by swapping a symlink, which a file watch can miss.
    const files = [this.opts.files.certFile, this.opts.files.keyFile, this.opts.files.clientCAFile];
    for (const dir of new Set(files.filter((f) => f !== undefined).map((f) => dirname(f)))) {
      try {
        const w = watch(dir, () => this.scheduleCheck());
        w.on("error", () => undefined);
        this.watchers.push(w);
      } catch (err) {
        this.opts.logger.warn({ dir, err: (err as Error).message }, "cannot watch certificate directory; polling only");
      }
    }
    const pollMs = this.opts.pollMs ?? 10_000;
    const tick = (): void => {
      this.poll = this.clock.after(pollMs, tick);
      this.check();
    };
    this.poll = this.clock.after(pollMs, tick);
  }

  private scheduleCheck(): void {
    this.debounce?.cancel();
    // Writers put the cert and the key in two steps; wait for both before reading.
    this.debounce = this.clock.after(100, () => this.check());
  }

  /** Re-reads the files; applies and returns true when they changed and form a valid pair. */
  check(): boolean {
    let next: KeyPair;
    try {
      next = loadKeyPair(this.opts.files);
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.lastError) {
        this.opts.logger.warn({ err: message }, "new TLS certificate not usable; still serving the previous one");
        this.opts.onResult?.("error");
      }
      this.lastError = message;
      return false;
    }
    this.lastError = "";
    const sameCA = next.ca === undefined ? this.current.ca === undefined : this.current.ca?.equals(next.ca) === true;
    if (next.cert.equals(this.current.cert) && next.key.equals(this.current.key) && sameCA) return false;
    this.current = next;
    this.opts.onReload(next);
    this.opts.onResult?.("success");
    this.opts.logger.info({ certFile: this.opts.files.certFile }, "serving certificate reloaded");
    return true;
  }

  stop(): void {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    this.poll?.cancel();
    this.debounce?.cancel();
  }
}
