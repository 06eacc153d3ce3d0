// Open connections against the cap, counted from the TCP accept (a handshake not finished holds a place too). A
// connection that has not sent a request yet holds a place for nothing, so it gives way: when a connection past the
// cap arrives, the oldest one that has not sent a request is closed to make room, and one still silent after
// `idleMs` is closed while the cap is near (three quarters full), and after `maxIdleMs` in any case. kcp sends its
// request as soon as its connection is up and then keeps the connection for the next ones, so none of this touches
// it; a caller opening connections that never send anything cannot keep genuine reviews out, however many it opens.
// A connection that has sent a request is never closed here; past the cap with nothing to close, it is marked, and
// its requests are refused with 429 (requests.ts).
import type { Socket } from "node:net";
import type { Clock } from "../../util/clock.ts";

/** A connection that has sent no request is closed after this while the cap is near. */
export const CONNECTION_IDLE_MS = 3_000;
/** ... and after this in any case (the handshake's own timeout). */
export const CONNECTION_MAX_IDLE_MS = 10_000;

export interface ConnectionLimits {
  max: number;
  idleMs: number;
  maxIdleMs: number;
}

export interface ConnectionHooks {
  /** Connections open after every change (e.g. a gauge). */
  open?: (n: number) => void;
  /** Called once per connection closed for having sent no request. */
  closedIdle?: () => void;
}

interface Connection {
  socket: Socket;
  peer: string;
  opened: number;
  overCapacity: boolean;
}

/** The peer's address and port: how a TLS socket finds the TCP connection under it. */
const peerOf = (s: Socket): string => `${s.remoteAddress ?? ""}|${s.remotePort ?? ""}`;

export class Connections {
  readonly max: number;
  private readonly limits: ConnectionLimits;
  private readonly clock: Clock;
  private readonly hooks: ConnectionHooks;
  private readonly byPeer = new Map<string, Connection>();
  /** Connections that have not sent a request, oldest first. */
  private readonly silent = new Set<Connection>();

  constructor(limits: ConnectionLimits, clock: Clock, hooks: ConnectionHooks = {}) {
    this.max = limits.max;
    this.limits = limits;
    this.clock = clock;
    this.hooks = hooks;
  }

  get open(): number {
    return this.byPeer.size;
  }

  /** A TCP connection accepted: counted until it closes; past the cap, the oldest silent one makes room. */
  accepted(socket: Socket): void {
    const peer = peerOf(socket);
    const c: Connection = { socket, peer, opened: this.clock.now(), overCapacity: false };
    this.byPeer.set(peer, c);
    this.silent.add(c);
    socket.once("close", () => this.forget(c));
    this.hooks.open?.(this.byPeer.size);
    if (this.byPeer.size > this.max) {
      const oldest = this.silent.values().next().value;
      if (oldest && oldest !== c) this.close(oldest);
      else c.overCapacity = true;
    }
    this.watch(c, this.limits.idleMs);
  }

  /**
   * A request arrived on the (TLS) socket: its connection is no longer silent. Returns whether that connection was
   * let in past the cap: its requests are refused.
   */
  requested(socket: Socket): boolean {
    const c = this.byPeer.get(peerOf(socket));
    if (!c) return false;
    this.silent.delete(c);
    return c.overCapacity;
  }

  /** Closes a silent connection `after` ms from now if the cap is near by then, or once it has been silent too long. */
  private watch(c: Connection, after: number): void {
    this.clock.after(after, () => {
      if (!this.silent.has(c)) return;
      const silentFor = this.clock.now() - c.opened;
      if (silentFor >= this.limits.maxIdleMs || this.open >= (this.max * 3) / 4) return this.close(c);
      this.watch(c, Math.min(this.limits.idleMs, this.limits.maxIdleMs - silentFor));
    });
  }

  /** Uncounted at once, so that arrivals before its close event do not close another one for the same place. */
  private close(c: Connection): void {
    this.forget(c);
    this.hooks.closedIdle?.();
    c.socket.destroy();
  }

  private forget(c: Connection): void {
    this.silent.delete(c);
    if (this.byPeer.get(c.peer) === c) this.byPeer.delete(c.peer);
    this.hooks.open?.(this.byPeer.size);
  }
}
