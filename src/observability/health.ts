// The plain-HTTP side port every binary serves: /healthz (process alive), /readyz (named checks), /metrics.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

/** A readiness check returns undefined when ready, or the reason it is not. */
export type ReadyCheck = () => string | undefined;

/**
 * The health port is plain HTTP and answers anyone who reaches it, so it is capped like the webhook port: a stranger
 * holding connections open cannot take the memory or the sockets the probes and the scrape need. Probes and scrapes
 * send no body and take milliseconds, so tight timeouts cost them nothing.
 */
export const HEALTH_LIMITS = { maxConnections: 32, headersTimeoutMs: 5_000, requestTimeoutMs: 10_000 };

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Parses `host:port`, `:port` or `port` into listen options; `:8081` listens on all interfaces. */
export function parseListenAddress(addr: string): { host?: string; port: number } {
  const m = /^(?:(.*):)?(\d+)$/.exec(addr.trim());
  if (!m) throw new Error(`invalid listen address "${addr}": want host:port or :port`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`invalid listen address "${addr}": port out of range`);
  const host = m[1]?.replace(/^\[(.*)\]$/, "$1");
  return host ? { host, port } : { port };
}

export async function startHealthServer(
  addr: string,
  registry: Registry,
  checks: Record<string, ReadyCheck>,
  limits: typeof HEALTH_LIMITS = HEALTH_LIMITS,
): Promise<HealthServer> {
  const server = http.createServer(
    { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs },
    (req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/healthz" || path === "/livez") {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      } else if (path === "/readyz") {
        const failing = Object.entries(checks)
          .map(([name, check]) => [name, check()] as const)
          .filter(([, reason]) => reason !== undefined);
        if (failing.length === 0) res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        else
          res
            .writeHead(503, { "content-type": "text/plain" })
            .end(failing.map(([name, reason]) => `${name}: ${reason}`).join("\n") + "\n");
      } else if (path === "/metrics") {
        registry.metrics().then(
          (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
          (err: unknown) => res.writeHead(500).end(String(err)),
        );
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      }
    },
  );
  // Past the cap Node closes new connections at once, before reading a byte.
  server.maxConnections = limits.maxConnections;
  const { host, port } = parseListenAddress(addr);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
