// Two webhook replicas behind one address on loopback: a TCP pass-through (TLS ends at the replicas) that spreads
// connections round-robin over its backends. The ValidatingWebhookConfiguration's URL points here. It can also play
// "unreachable": every new connection is reset while `unreachable` is set.
import net from "node:net";

export class RoundRobinProxy {
  private readonly server: net.Server;
  private next = 0;
  backends: number[];
  unreachable = false;
  readonly sockets = new Set<net.Socket>();

  constructor(backends: number[]) {
    this.backends = backends;
    this.server = net.createServer((client) => this.accept(client));
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on("close", () => this.sockets.delete(client));
    client.on("error", () => undefined);
    if (this.unreachable || this.backends.length === 0) {
      client.resetAndDestroy();
      return;
    }
    const port = this.backends[this.next++ % this.backends.length] as number;
    const upstream = net.connect(port, "127.0.0.1");
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }

  /** Drops every open connection (kcp reconnects and lands on the next backend). */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  listen(): Promise<number> {
    return listenOnLoopback(this.server);
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Listens on a free loopback port; resolves to the port. */
export function listenOnLoopback(server: {
  listen(port: number, host: string, cb: () => void): unknown;
  address(): unknown;
}): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const a = server.address() as { port?: number } | null;
      resolve(a?.port ?? 0);
    });
  });
}
