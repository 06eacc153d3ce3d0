// The checker's own connection to kcp: a shard's admin kubeconfig read with `yaml`, and LIST + WATCH over node:https.
// Deliberately not src/kcp/rest.ts, so the history does not depend on the product's client.
import https from "node:https";
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export interface ShardConn {
  server: string;
  agent: https.Agent;
  headers: Record<string, string>;
}

interface KubeconfigFile {
  clusters?: { name: string; cluster: { server: string; "certificate-authority-data"?: string } }[];
  users?: {
    name: string;
    user: { token?: string; "client-certificate-data"?: string; "client-key-data"?: string };
  }[];
  contexts?: { name: string; context: { cluster: string; user: string } }[];
}

export function shardConn(kubeconfigFile: string, context: string): ShardConn {
  const kc = parse(readFileSync(kubeconfigFile, "utf8")) as KubeconfigFile;
  const ctx = kc.contexts?.find((c) => c.name === context)?.context;
  const cluster = kc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = kc.users?.find((u) => u.name === ctx?.user)?.user;
  if (!ctx || !cluster || !user) throw new Error(`${kubeconfigFile}: context ${context} is incomplete`);
  const b64 = (v: string | undefined): Buffer | undefined => (v ? Buffer.from(v, "base64") : undefined);
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: 64,
    ca: b64(cluster["certificate-authority-data"]),
    cert: b64(user["client-certificate-data"]),
    key: b64(user["client-key-data"]),
  });
  return {
    server: cluster.server.replace(/\/clusters\/.*$/, "").replace(/\/+$/, ""),
    agent,
    headers: user.token ? { authorization: `Bearer ${user.token}` } : {},
  };
}

export interface Answer {
  status: number;
  body: unknown;
  /** The Status message of an error answer (or the transport error), "" on success. */
  message: string;
}

/** One request; never throws: a transport failure is status 0 with its message. */
export async function request(
  conn: ShardConn,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = https.request(
      `${conn.server}${path}`,
      {
        method,
        agent: conn.agent,
        headers: {
          ...conn.headers,
          accept: "application/json",
          ...(payload !== undefined ? { "content-type": opts.contentType ?? "application/json" } : {}),
        },
        timeout: opts.timeoutMs ?? 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown = text;
          try {
            body = JSON.parse(text) as unknown;
          } catch {
            // keep the text
          }
          const status = res.statusCode ?? 0;
          const message =
            status >= 200 && status < 300
              ? ""
              : typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string"
                ? (body as { message: string }).message
                : text.slice(0, 500);
          resolve({ status, body, message });
        });
        res.on("error", (err) => resolve({ status: 0, body: undefined, message: err.message }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on("error", (err) => resolve({ status: 0, body: undefined, message: err.message }));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export async function getJson(conn: ShardConn, path: string): Promise<{ status: number; body: unknown }> {
  return request(conn, "GET", path, { timeoutMs: 30_000 });
}

/** Streams watch events (one JSON object per line) until the server ends the watch or `signal` aborts. */
export async function watchStream(
  conn: ShardConn,
  path: string,
  signal: AbortSignal,
  onEvent: (ev: { type: string; object: Record<string, unknown> }) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${conn.server}${path}`,
      { agent: conn.agent, headers: { ...conn.headers, accept: "application/json" }, signal },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          resolve(res.statusCode ?? 0);
          return;
        }
        let buf = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buf += chunk;
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line) onEvent(JSON.parse(line) as { type: string; object: Record<string, unknown> });
          }
        });
        res.on("end", () => resolve(200));
        res.on("error", (err) => (signal.aborted ? resolve(0) : reject(err)));
      },
    );
    req.on("error", (err) => (signal.aborted ? resolve(0) : reject(err)));
    req.end();
  });
}
