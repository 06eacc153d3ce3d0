// I6, no tenant-chosen endpoint: neither binary ever connects to a host a tenant wrote into its endpoint slice. The
// hostile provider rewrites its slice's URLs to a counting listener on loopback (over https and http) among others
// (tools/soak/hostile-provider.ts); every connection that listener accepted is a binary following a URL only a tenant
// vouched for, so each run's count must be 0.
import type { Judging } from "./findings.ts";

export function checkTenantEndpoints(j: Judging): void {
  const n = j.h.tenantConnections ?? 0;
  if (n > 0)
    j.out.violations.push({
      invariant: "I6",
      message: `the hostile provider's listener accepted ${n} connection(s): a binary followed a URL a tenant wrote into its endpoint slice`,
      at: j.h.endedAt,
    });
}
