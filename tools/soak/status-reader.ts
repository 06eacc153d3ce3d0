// TEST DOUBLE, never the product: the weakened build that reads a DependencyRule's status back (--weakened-status).
// The product may not: no read of a rule's status in src/webhook or in the controller's inputs (a tenant can write
// it). This HTTPS server sits where the webhook address points and acts as the webhook at 3571bae did with a rule
// whose status said its index was out of reach but protecting (src/webhook/rules/rule-status.ts there: IndexRevoked,
// IndexLost, IndexResyncing): it refuses every DELETE of a type that rule gates with 503, "cannot check dependents
// yet". Every other review it passes to the real replicas unchanged. It reads the rules as kcp's own watch shows them
// (the soak's history, as the old webhook's informer would have), so a status the hostile provider forged (kcp's
// maximal permission policy off) is what it trusts, until the controller writes the truth. The soak shows I5 firing
// on it, and 0 with the real build on the same forgeries.
import type { IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import { readFileSync } from "node:fs";
import { listenOnLoopback } from "./proxy.ts";

/** The DependentsIndexed reasons the old webhook read as "protected, but the index cannot answer now". */
const FAIL_CLOSED_REASONS = ["IndexRevoked", "IndexLost", "IndexResyncing"];

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (v && typeof v === "object" ? (v as Obj) : {});

/** The rule that, by its status alone, would have refused a delete of `resource` ("vpcs.network.test.io"). */
export function readBackRefusal(rules: readonly Obj[], resource: string): string | undefined {
  for (const rule of rules) {
    const deps = (rec(rule["spec"])["dependencies"] as Obj[] | undefined) ?? [];
    if (!deps.some((d) => `${String(d["resource"])}.${String(d["group"])}` === resource)) continue;
    const conditions = (rec(rule["status"])["conditions"] as Obj[] | undefined) ?? [];
    const reason = conditions.find((c) => c["type"] === "DependentsIndexed")?.["reason"];
    if (typeof reason === "string" && FAIL_CLOSED_REASONS.includes(reason))
      return `${String(rec(rule["metadata"])["name"])}'s status says ${reason}`;
  }
  return undefined;
}

export class StatusReadingWebhook {
  private readonly server: https.Server;
  private next = 0;
  /** Reviews it refused by a rule's status (for the log). */
  refused = 0;

  constructor(tls: { cert: string; key: string }, backends: readonly number[], rules: () => readonly Obj[]) {
    this.server = https.createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        let review: Obj = {};
        try {
          review = rec(JSON.parse(body.toString("utf8")));
        } catch {
          // not a review: passed on as it came
        }
        const r = rec(review["request"]);
        const gvr = rec(r["resource"]);
        const why =
          r["operation"] === "DELETE"
            ? readBackRefusal(rules(), `${String(gvr["resource"])}.${String(gvr["group"])}`)
            : undefined;
        if (!why) return this.pass(req, body, res, backends);
        this.refused++;
        const message = `cannot check dependents of ${String(gvr["resource"])} yet (weakened build: ${why})`;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            apiVersion: review["apiVersion"] ?? "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: { uid: r["uid"] ?? "", allowed: false, status: { code: 503, message } },
          }),
        );
      });
    });
  }

  /** The review to a real replica, round-robin, and its answer back as it came. */
  private pass(req: IncomingMessage, body: Buffer, res: ServerResponse, backends: readonly number[]): void {
    const port = backends[this.next++ % backends.length] as number;
    const up = https.request(
      {
        host: "127.0.0.1",
        port,
        path: req.url,
        method: req.method,
        headers: { "content-type": req.headers["content-type"] ?? "application/json" },
        rejectUnauthorized: false, // the replicas' certificate is the one this server presents
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on("error", () => res.destroy());
    up.end(body);
  }

  listen(): Promise<number> {
    return listenOnLoopback(this.server);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
