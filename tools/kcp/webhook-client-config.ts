// The client certificate kcp presents to admission webhooks: an AdmissionConfiguration for kcp's own
// ValidatingWebhook plugin whose kubeconfig names one user per webhook host.
import { writeFileSync } from "node:fs";
import path from "node:path";

/** Writes kcp's admission configuration and webhook-client kubeconfig into `dir`; returns the config file. */
export function writeWebhookClientConfig(
  dir: string,
  client: { certFile: string; keyFile: string; hosts: string[] },
): string {
  const kubeconfig = path.join(dir, "webhook-clients.kubeconfig");
  // users[].name is matched against the webhook's host:port; paths must be absolute (kcp reads them itself).
  const users = client.hosts.map((host) => ({
    name: host,
    user: { "client-certificate": path.resolve(client.certFile), "client-key": path.resolve(client.keyFile) },
  }));
  writeFileSync(kubeconfig, JSON.stringify({ apiVersion: "v1", kind: "Config", users }, null, 2) + "\n");
  const config = path.join(dir, "admission.yaml");
  const webhookAdmission = {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "WebhookAdmissionConfiguration",
    kubeConfigFile: kubeconfig,
  };
  const admission = {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AdmissionConfiguration",
    // The kcp plugin reads only the entry under its own name; `ValidatingAdmissionWebhook` reaches the upstream
    // plugin, which kcp keeps off.
    plugins: [{ name: "apis.kcp.io/ValidatingWebhook", configuration: webhookAdmission }],
  };
  writeFileSync(config, JSON.stringify(admission, null, 2) + "\n");
  return config;
}
