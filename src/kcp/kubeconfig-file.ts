// Reading a kubeconfig the way kubectl does, without @kubernetes/client-node: $KUBECONFIG may list several files
// (the first to define a name wins, the first current-context wins), relative paths are relative to the file that
// names them, and the user can authenticate by client certificate, token, token file (read again for every request,
// so a rotated token is used at once) or basic auth. Only an `exec` or `auth-provider` user loads client-node, on
// its first request: loading it costs about 87 MiB of memory (bench/README.md), which only those users pay.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type https from "node:https";
import os from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { asRecord } from "../util/json.ts";
import type { Credentials } from "./rest.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The parts of the chosen context a client needs. */
export interface KubeconfigContext {
  server: string;
  /** The context's namespace, if it names one. */
  namespace?: string;
  credentials: Credentials;
}

type Entry = { fields: Record<string, unknown>; dir: string };

interface Merged {
  files: string[];
  currentContext?: string;
  clusters: Map<string, Entry>;
  users: Map<string, Entry>;
  contexts: Map<string, Entry>;
}

/** The kubeconfig files to read: the given one, else $KUBECONFIG's list, else ~/.kube/config. */
export function kubeconfigFiles(file: string | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  if (file) return [file];
  const list = (env["KUBECONFIG"] ?? "").split(path.delimiter).filter((f) => f !== "");
  return list.length > 0 ? list : [path.join(os.homedir(), ".kube", "config")];
}

function merge(files: readonly string[]): Merged {
  const merged: Merged = { files: [...files], clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const file of files) {
    let doc: unknown;
    try {
      doc = parse(readFileSync(file, "utf8"));
    } catch (err) {
      // $KUBECONFIG may name files that do not exist (kubectl skips them); a single named file must exist.
      if (files.length > 1 && (err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw new ConfigError(`cannot load kubeconfig ${file}: ${(err as Error).message}`);
    }
    const d = asRecord(doc) ?? {};
    const dir = path.dirname(path.resolve(file));
    const current = d["current-context"];
    if (merged.currentContext === undefined && typeof current === "string" && current !== "")
      merged.currentContext = current;
    for (const [list, field, into] of [
      ["clusters", "cluster", merged.clusters],
      ["users", "user", merged.users],
      ["contexts", "context", merged.contexts],
    ] as const) {
      for (const item of Array.isArray(d[list]) ? (d[list] as unknown[]) : []) {
        const named = asRecord(item);
        const name = named?.["name"];
        if (typeof name !== "string" || into.has(name)) continue;
        into.set(name, { fields: asRecord(named?.[field]) ?? {}, dir });
      }
    }
  }
  return merged;
}

const str = (e: Entry | undefined, key: string): string | undefined => {
  const v = e?.fields[key];
  return typeof v === "string" && v !== "" ? v : undefined;
};

/** Inline base64 data, else the file (relative to the kubeconfig that names it). */
function material(e: Entry | undefined, dataKey: string, fileKey: string): Buffer | undefined {
  const data = str(e, dataKey);
  if (data) return Buffer.from(data, "base64");
  const file = str(e, fileKey);
  if (!file) return undefined;
  try {
    return readFileSync(path.resolve(e!.dir, file));
  } catch (err) {
    throw new ConfigError(`cannot read ${fileKey} ${file}: ${(err as Error).message}`);
  }
}

/** Reads the kubeconfig and picks `context` (default: the current context). Throws ConfigError with a reason. */
export function readKubeconfig(opts: {
  kubeconfig?: string | undefined;
  context?: string | undefined;
}): KubeconfigContext {
  const files = kubeconfigFiles(opts.kubeconfig);
  const where = files.join(path.delimiter);
  const m = merge(files);
  const contextName = opts.context ?? m.currentContext;
  if (!contextName) throw new ConfigError(`kubeconfig ${where} has no current context`);
  const context = m.contexts.get(contextName);
  if (!context) throw new ConfigError(`kubeconfig ${where} has no context "${contextName}"`);
  const clusterName = str(context, "cluster");
  const cluster = clusterName ? m.clusters.get(clusterName) : undefined;
  const server = str(cluster, "server");
  if (!server) throw new ConfigError(`kubeconfig ${where} has no current cluster (context "${contextName}")`);
  const userName = str(context, "user");
  const user = userName ? m.users.get(userName) : undefined;
  const ca = material(cluster, "certificate-authority-data", "certificate-authority");
  const cert = material(user, "client-certificate-data", "client-certificate");
  const key = material(user, "client-key-data", "client-key");
  const namespace = str(context, "namespace");
  return {
    server,
    ...(namespace ? { namespace } : {}),
    credentials: {
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      insecureSkipTLSVerify: cluster?.fields["insecure-skip-tls-verify"] === true,
      ...auth(user, files, contextName),
    },
  };
}

/** The per-request auth of a user entry: headers, and for exec plugins a client certificate they may return. */
function auth(
  user: Entry | undefined,
  files: readonly string[],
  contextName: string,
): Pick<Credentials, "headers" | "clientCertificate"> {
  const token = str(user, "token");
  if (token) return { headers: () => Promise.resolve({ authorization: `Bearer ${token}` }) };
  const tokenFile = str(user, "tokenFile");
  if (tokenFile) {
    const file = path.resolve(user!.dir, tokenFile);
    return { headers: async () => ({ authorization: `Bearer ${(await readFile(file, "utf8")).trim()}` }) };
  }
  if (user?.fields["exec"] !== undefined || user?.fields["auth-provider"] !== undefined)
    return pluginAuth(files, contextName);
  const username = str(user, "username");
  const password = str(user, "password");
  if (username !== undefined && password !== undefined) {
    const basic = Buffer.from(`${username}:${password}`).toString("base64");
    return { headers: () => Promise.resolve({ authorization: `Basic ${basic}` }) };
  }
  return { headers: () => Promise.resolve({}) };
}

/** Exec and auth-provider credentials, through client-node, loaded on first use and kept (it caches tokens). */
function pluginAuth(files: readonly string[], contextName: string): Pick<Credentials, "headers" | "clientCertificate"> {
  let loaded: Promise<{ applyToHTTPSOptions(o: https.RequestOptions): Promise<void> }> | undefined;
  const apply = async (): Promise<https.RequestOptions> => {
    loaded ??= import("@kubernetes/client-node").then(({ KubeConfig }) => {
      const kc = new KubeConfig();
      if (files.length === 1) kc.loadFromFile(files[0]!);
      else kc.loadFromDefault();
      kc.setCurrentContext(contextName);
      return kc;
    });
    const opts: https.RequestOptions = { headers: {} };
    await (await loaded).applyToHTTPSOptions(opts);
    return opts;
  };
  return {
    headers: async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries((await apply()).headers ?? {}))
        if (typeof v === "string") headers[k.toLowerCase()] = v;
      return headers;
    },
    // An exec plugin may answer with a client certificate instead of a token (ExecCredential clientCertificateData).
    clientCertificate: async () => {
      const { cert, key } = await apply();
      return cert !== undefined && key !== undefined
        ? { cert: cert as Buffer | string, key: key as Buffer | string }
        : undefined;
    },
  };
}
