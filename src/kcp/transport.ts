// How a RestClient's requests reach kcp: two connection pools per identity, and a deadline that runs from the moment a
// request is made. Watches hold a socket for as long as they are open; sharing one capped pool with them let 64 open
// watches to one address starve every deadline-bound request (a second look, a rule check) of a socket, and Node
// starts a socket's idle timer only once it has one, so such a request waited without any bound.
import https from "node:https";
import http from "node:http";

export interface Credentials {
  ca?: Buffer | string;
  cert?: Buffer | string;
  key?: Buffer | string;
  insecureSkipTLSVerify?: boolean;
  /** Returns the auth headers for one request; async so exec/token-file credentials can refresh. */
  headers: () => Promise<Record<string, string>>;
  /** A client certificate an exec plugin returned, asked for per request so that a rotated one is used at once. */
  clientCertificate?: () => Promise<{ cert: Buffer | string; key: Buffer | string } | undefined>;
}

/** The two pools of one identity: request/response traffic (capped) and watches (one socket each, uncapped). */
export interface Agents {
  requests: https.Agent | http.Agent;
  watches: https.Agent | http.Agent;
}

/** Sockets for request/response traffic to one address; watches never take one of these. */
export const MAX_REQUEST_SOCKETS = 64;

export function agentsFor(baseUrl: string, credentials: Credentials): Agents {
  const make = (maxSockets: number) =>
    baseUrl.startsWith("http:")
      ? new http.Agent({ keepAlive: true, maxSockets })
      : new https.Agent({
          keepAlive: true,
          maxSockets,
          ...(credentials.ca !== undefined ? { ca: credentials.ca } : {}),
          ...(credentials.cert !== undefined ? { cert: credentials.cert } : {}),
          ...(credentials.key !== undefined ? { key: credentials.key } : {}),
          rejectUnauthorized: credentials.insecureSkipTLSVerify !== true,
        });
  return { requests: make(MAX_REQUEST_SOCKETS), watches: make(Infinity) };
}

export interface Exchange {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: Buffer | undefined;
  signal?: AbortSignal | undefined;
  /** Until the answer's headers arrive, counted from now, then as the socket's idle time; 0 for none (watches). */
  timeoutMs: number;
  watch: boolean;
}

/** Sends one request on the pool it belongs to; resolves with the response once its headers are in. */
export async function send(agents: Agents, credentials: Credentials, x: Exchange): Promise<http.IncomingMessage> {
  const tls = await credentials.clientCertificate?.();
  const mod = x.url.startsWith("http:") ? http : https;
  return new Promise((resolve, reject) => {
    const req = mod.request(x.url, {
      method: x.method,
      headers: x.headers,
      agent: x.watch ? agents.watches : agents.requests,
      // Per-request TLS material: the agent keeps a separate socket pool per certificate, so a rotation takes effect.
      ...(tls ? { cert: tls.cert, key: tls.key } : {}),
      ...(x.signal ? { signal: x.signal } : {}),
    });
    // A request still queued for a socket emits no error when destroyed until it gets one, so the promise is
    // settled here as well.
    const fail = (err: Error) => {
      req.destroy(err);
      reject(err);
    };
    if (x.timeoutMs > 0) {
      const late = () => fail(new Error(`${x.method} ${x.url}: no answer within ${x.timeoutMs} ms`));
      // The deadline runs while the request still waits for a socket, too.
      const deadline = setTimeout(late, x.timeoutMs);
      req.once("response", () => clearTimeout(deadline));
      req.once("close", () => clearTimeout(deadline));
      req.setTimeout(x.timeoutMs, late);
    }
    const onAbort = () => fail(abortError(x.signal!));
    if (x.signal?.aborted) onAbort();
    x.signal?.addEventListener("abort", onAbort, { once: true });
    req.once("close", () => x.signal?.removeEventListener("abort", onAbort));
    req.on("response", resolve);
    req.on("error", reject);
    req.end(x.payload);
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : Object.assign(new Error("The operation was aborted"), { name: "AbortError" });
}
