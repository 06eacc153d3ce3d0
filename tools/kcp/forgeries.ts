// A hostile provider's forgeries, shared by the hostile-provider e2e (test/e2e/hostile.ts) and the soak's hostile
// provider (tools/soak/hostile-provider.ts): the rule status conditions it forges (each reason the webhook once read
// from a rule's status) and the listener that counts connections to a host it wrote into its endpoint slice.
import { createServer, type Server, type Socket } from "node:net";

/** Counts TCP connections accepted on 127.0.0.1 and closes each at once: a tenant-chosen host, http or https. */
export class CountingListener {
  count = 0;
  private readonly server: Server;
  port = 0;
  constructor() {
    this.server = createServer((s: Socket) => {
      this.count++;
      s.destroy();
    });
  }
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A forged condition: one per reason the webhook read from a rule's status at 3571bae. */
export interface Forgery {
  type: "DependentsIndexed" | "ReferencesValid";
  status: "True" | "False" | "Unknown";
  reason: string;
}

export const FORGERIES: readonly Forgery[] = [
  { type: "DependentsIndexed", status: "False", reason: "IndexRevoked" },
  { type: "DependentsIndexed", status: "False", reason: "IndexLost" },
  { type: "DependentsIndexed", status: "Unknown", reason: "IndexResyncing" },
  { type: "DependentsIndexed", status: "True", reason: "LiveLookup" },
  { type: "DependentsIndexed", status: "True", reason: "Indexed" },
  { type: "ReferencesValid", status: "False", reason: "DependentInvalid" },
  { type: "ReferencesValid", status: "False", reason: "ChecksDeclined" },
];
/** The forged conditions' time: a revocation "starting" in 2099 would refuse for 30 minutes from then. */
export const FORGED_TIME = "2099-01-01T00:00:00Z";

export const forgedStatus = (f: Forgery, generation: number) => ({
  conditions: [
    { ...f, message: "forged", lastTransitionTime: FORGED_TIME, observedGeneration: generation },
    {
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: "forged",
      lastTransitionTime: FORGED_TIME,
      observedGeneration: generation,
    },
  ],
});
