// The deliberately weakened build: an HTTPS admission webhook that allows every review. The soak points its proxy at
// it to show that the checker catches what it claims (I1 must fire). Only the soak starts it.
import https from "node:https";
import { readFileSync } from "node:fs";
import { listenOnLoopback } from "./proxy.ts";

export class AllowAllWebhook {
  private readonly server: https.Server;

  constructor(tls: { cert: string; key: string }) {
    this.server = https.createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let review: { apiVersion?: string; request?: { uid?: string } } = {};
        try {
          review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof review;
        } catch {
          // answer anyway: this server allows everything
        }
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            apiVersion: review.apiVersion ?? "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: { uid: review.request?.uid ?? "", allowed: true },
          }),
        );
      });
    });
  }

  listen(): Promise<number> {
    return listenOnLoopback(this.server);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
