// The deliberately weakened build: an HTTPS admission webhook that allows every review but every third, which it
// refuses with 503 as a faulty rule's blast radius gone wide would. The soak points its proxy at it to show that the
// checker catches what it claims: I1 must fire on the allowed deletes and I5 on the refused ones. Only the soak starts
// it.
import https from "node:https";
import { readFileSync } from "node:fs";
import { listenOnLoopback } from "./proxy.ts";

export class AllowAllWebhook {
  private readonly server: https.Server;
  private reviews = 0;

  constructor(tls: { cert: string; key: string }) {
    this.server = https.createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let review: { apiVersion?: string; request?: { uid?: string } } = {};
        try {
          review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof review;
        } catch {
          // answer anyway: this server decides without reading the review
        }
        const refuse = ++this.reviews % 3 === 0;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            apiVersion: review.apiVersion ?? "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: refuse
              ? {
                  uid: review.request?.uid ?? "",
                  allowed: false,
                  status: { code: 503, message: "weakened build: refused as if another author's rule were faulty" },
                }
              : { uid: review.request?.uid ?? "", allowed: true },
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
