// The hostile consumer's slow uploads: at seeded random moments, 20-40 TLS connections straight to each webhook
// replica's port (not through the proxy kcp uses), each a POST to /validate/<network provider> whose review body
// arrives a byte every 1-2 s. The webhook cuts such a trickle off after about three seconds (408: slower than its
// minimum pace); the worker opens another at once, so the trickles stand for the episode's whole 10-60 s. A review
// takes a slot only once its body is whole, so none of this may refuse a genuine review (I5 excuses nothing for it).
import tls from "node:tls";
import type { HostileEpisode } from "./history.ts";
import { sleep } from "./oplog.ts";
import type { Rng } from "./rng.ts";

export interface SlowUploadOptions {
  /** The replicas' own ports. */
  ports: number[];
  /** `/validate/<provider logical cluster>`: the DELETE reviews' route. */
  route: string;
  rng: Rng;
  signal: AbortSignal;
  everyMs: [number, number];
  holdMs: [number, number];
  episodes: HostileEpisode[];
  log: (line: string) => void;
}

interface Tally {
  opened: number;
  failed: number;
  /** The webhook's answers to trickles, by status line ("408"), and closes without an answer ("closed"). */
  answers: Record<string, number>;
}

export async function slowUploads(o: SlowUploadOptions): Promise<void> {
  while (!o.signal.aborted) {
    await sleep(o.rng.int(...o.everyMs), o.signal);
    if (o.signal.aborted) break;
    const perReplica = o.rng.int(20, 40);
    const holdMs = o.rng.int(...o.holdMs);
    const paces = Array.from({ length: perReplica * o.ports.length }, () => o.rng.int(1000, 2000));
    const tally: Tally = { opened: 0, failed: 0, answers: {} };
    const stop = AbortSignal.any([o.signal, AbortSignal.timeout(holdMs)]);
    const startAt = Date.now();
    await Promise.all(paces.map((pace, i) => trickle(o, o.ports[i % o.ports.length] as number, pace, stop, tally)));
    const answers = Object.entries(tally.answers).map(([k, v]) => `${k} ${v}`);
    const e: HostileEpisode = {
      kind: "slow-uploads",
      cluster: "",
      namespace: "",
      overloaded: [],
      startAt,
      endAt: Date.now(),
      detail:
        `${perReplica} trickling uploads to each of ${o.ports.length} replicas for ${Math.round(holdMs / 1000)} s: ` +
        `${tally.opened} connections opened, ${tally.failed} failed to connect; the webhook's answers: ` +
        `${answers.join(", ") || "none"}`,
    };
    o.episodes.push(e);
    o.log(`hostile slow uploads: ${e.detail}`);
  }
}

/** One trickle slot: a connection, and a new one whenever the webhook cuts it off, until `stop`. */
async function trickle(o: SlowUploadOptions, port: number, pace: number, stop: AbortSignal, t: Tally): Promise<void> {
  while (!stop.aborted) {
    await oneUpload(o.route, port, pace, stop, t);
    await sleep(200, stop);
  }
}

/** A plausible DELETE review, so that only its pace gives it away. */
function reviewBody(): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "00000000-0000-0000-0000-000000000000",
      kind: { group: "network.test.io", version: "v1", kind: "VPC" },
      resource: { group: "network.test.io", version: "v1", resource: "vpcs" },
      name: "h-vpc",
      namespace: "hostile",
      operation: "DELETE",
      userInfo: { username: "hostile" },
      oldObject: { metadata: { name: "h-vpc", annotations: { "x-padding": "p".repeat(2048) } } },
    },
  });
}

function oneUpload(route: string, port: number, pace: number, stop: AbortSignal, t: Tally): Promise<void> {
  return new Promise((resolve) => {
    const body = reviewBody();
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false });
    let sent = 0;
    let opened = false;
    let drip: NodeJS.Timeout | undefined;
    const connectTimer = setTimeout(() => socket.destroy(), 5000); // a stalled replica never finishes the handshake
    const onStop = (): void => void socket.destroy();
    stop.addEventListener("abort", onStop, { once: true });
    socket.on("secureConnect", () => {
      clearTimeout(connectTimer);
      opened = true;
      t.opened++;
      socket.write(
        `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      );
      const next = (): void => {
        if (sent < body.length) socket.write(body.slice(sent, ++sent));
        drip = setTimeout(next, pace);
      };
      next();
    });
    let answered = false;
    socket.on("data", (d: Buffer) => {
      if (answered) return;
      answered = true;
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(d.toString("latin1"))?.[1] ?? "other";
      t.answers[status] = (t.answers[status] ?? 0) + 1;
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(connectTimer);
      clearTimeout(drip);
      stop.removeEventListener("abort", onStop);
      if (!opened) t.failed++;
      else if (!answered && !stop.aborted) t.answers["closed"] = (t.answers["closed"] ?? 0) + 1;
      resolve();
    });
  });
}
