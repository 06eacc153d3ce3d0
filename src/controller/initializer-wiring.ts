// How the controller runs the provider workspace initializer (src/controller/initializer.ts) when
// --provider-workspace-type is set: in the same process, on the same identity, connection and leader election.
import type { Logger } from "pino";
import type { KcpConnection } from "../kcp/kubeconfig.ts";
import type { Clock } from "../util/clock.ts";
import { ProviderInitializer } from "./initializer.ts";

export interface ProviderInitializerConfig {
  /** `<workspace path>:<name>` of the WorkspaceType whose initializer to serve, e.g. root:dependency-provider. */
  providerWorkspaceType?: { path: string; name: string };
  /** The webhook's user name, bound by the index consent the initializer writes into each provider workspace. */
  webhookUser?: string;
}

export function providerInitializerOf(
  config: ProviderInitializerConfig & { apiExportName: string; resyncMs: number },
  conn: KcpConnection,
  logger: Logger,
  clock: Clock,
  mayWrite: () => boolean,
): ProviderInitializer | undefined {
  const { providerWorkspaceType, webhookUser } = config;
  if (!providerWorkspaceType || !webhookUser) return undefined;
  const initializer = new ProviderInitializer({
    base: conn.base,
    workspaceType: providerWorkspaceType,
    target: { depCtrlPath: conn.workspace, exportName: config.apiExportName, webhookUser },
    logger,
    clock,
    resyncMs: config.resyncMs,
    mayWrite,
  });
  initializer.start();
  return initializer;
}
