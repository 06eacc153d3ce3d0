// The deliberately weakened build: an HTTPS admission webhook that allows every review but every third, which it
// refuses with 503 as a faulty rule's blast radius gone wide would, and every tenth, which it holds past kcp's 10 s
// webhook timeout as a review pool starved by slow uploads would (kcp then refuses the delete itself: "failed calling
// webhook ... context deadline exceeded"). The soak points its proxy at it to show that the checker catches what it
// claims: I1 must fire on the allowed deletes and I5 on both kinds of refusal. Only the soak starts it.
import https from "node:https";
import { readFileSync } from "node:fs";
import { listenOnLoopback } from "./proxy.ts";

export class AllowAllWebhook {
  private readonly server: https.Server;
  private reviews = 0;
  private readonly held = new Set<NodeJS.Timeout>();

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
        const n = ++this.reviews;
        const refuse = n % 3 === 0;
        const answer = (): void => {
          if (res.destroyed) return;
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
        };
        if (n % 10 !== 5) return answer();
        const t = setTimeout(() => {
          this.held.delete(t);
          answer();
        }, 12_000);
        this.held.add(t);
      });
    });
  }

  listen(): Promise<number> {
    return listenOnLoopback(this.server);
  }

  async close(): Promise<void> {
    for (const t of this.held) clearTimeout(t);
    this.held.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
