// The Helm chart (deploy/chart): `helm lint`, and `helm template` in five configurations (default values with kcp's
// addresses, the one value a release must give; several replicas with a cert-manager ClusterIssuer, a LoadBalancer
// and a NetworkPolicy; an existing TLS Secret with the NetworkPolicy opted out; and two in the Go original's value
// shape, one image per binary with an existing Secret or an issuer named alone). Every rendered object is validated offline
// against the Kubernetes, cert-manager and prometheus-operator schemas (kubernetes-models), the objects are checked
// to fit together (selectors, named ports, probe ports, Secrets, certificate names), the binaries' own flag parsers
// accept the rendered arguments, and wrong values fail with the message that says what to change.
// helm is hack/helm/build.sh's (built once from Go modules and cached; HELM_BIN to use another).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as networking from "kubernetes-models/networking.k8s.io/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as scheduling from "kubernetes-models/scheduling.k8s.io/v1";
import * as certManager from "@kubernetes-models/cert-manager/cert-manager.io/v1";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import type { IDeployment } from "kubernetes-models/apps/v1";
import type { IPodSpec, IPodTemplateSpec, ISecret, IService } from "kubernetes-models/v1";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1";
import type { ICertificate, IIssuer } from "@kubernetes-models/cert-manager/cert-manager.io/v1";
import type { IServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { parseAllDocuments, parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { parseConfig } from "../../src/cmd/controller.ts";
import { imageCommand } from "../../tools/kcp/binaries.ts";
import { parseConfig as parseWebhookConfig } from "../../src/cmd/webhook.ts";
import { DEFAULT_LIMITS, type TransportLimits } from "../../src/webhook/http/limits.ts";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHART = path.join(REPO, "deploy/chart");
const tmp = mkdtempSync(path.join(os.tmpdir(), "chart-test-"));

/** A rendered object before validation; after it, `typed` casts it to its kubernetes-models interface. */
interface KObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

after(() => rmSync(tmp, { recursive: true, force: true }));

let helmBin = "";
before(() => {
  const out = execFileSync("bash", [path.join(REPO, "hack/helm/build.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  helmBin = out.trim().split("\n").at(-1) ?? "";
});

function helm(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(helmBin, args, { encoding: "utf8", env: { ...process.env, HELM_CACHE_HOME: tmp } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function render(release: string, namespace: string, valueFiles: string[]): KObject[] {
  const r = helm(["template", release, CHART, "--namespace", namespace, ...valueFiles.flatMap((f) => ["-f", f])]);
  assert.equal(r.status, 0, `helm template failed:\n${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KObject | null)
    .filter((o): o is KObject => o !== null);
}

type ModelClass = new (data: KObject) => { validate(): void };

/** Model classes by "apiVersion/kind"; an object of a kind not listed here fails (nothing slips by unvalidated). */
const MODELS = new Map<string, ModelClass>();
for (const mod of [core, apps, networking, policy, scheduling, certManager, monitoring]) {
  for (const value of Object.values(mod as Record<string, unknown>)) {
    const cls = value as { apiVersion?: unknown; kind?: unknown };
    if (typeof value === "function" && typeof cls.apiVersion === "string" && typeof cls.kind === "string") {
      MODELS.set(`${cls.apiVersion}/${cls.kind}`, value as ModelClass);
    }
  }
}

function schemaErrors(objects: KObject[]): string[] {
  const errors: string[] = [];
  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`;
    const Model = MODELS.get(`${o.apiVersion}/${o.kind}`);
    if (!Model) {
      errors.push(`${id}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      errors.push(`${id}: ${(err as Error).message}`);
    }
  }
  return errors;
}

interface Kinds {
  Deployment: IDeployment;
  Service: IService;
  Secret: ISecret;
  PodDisruptionBudget: IPodDisruptionBudget;
  NetworkPolicy: INetworkPolicy;
  Certificate: ICertificate;
  Issuer: IIssuer;
  ServiceMonitor: IServiceMonitor;
}

/** A value the rendered manifest must have. */
function must<T>(value: T | undefined | null, what: string): T {
  assert.ok(value !== undefined && value !== null, `${what} is set`);
  return value;
}

const all = <K extends keyof Kinds>(objects: KObject[], kind: K): Kinds[K][] =>
  objects.filter((o) => o.kind === kind) as unknown as Kinds[K][];
function one<K extends keyof Kinds>(objects: KObject[], kind: K, name: string): Kinds[K] {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  const have = objects.map((o) => `${o.kind}/${o.metadata.name}`).join(", ");
  assert.ok(found, `${kind} ${name} is rendered (have: ${have})`);
  return found as unknown as Kinds[K];
}
const nameOf = (o: { metadata?: { name?: string } }): string => o.metadata?.name ?? "";
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  Object.keys(selector ?? {}).length > 0 && Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
const flag = (args: string[], name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

interface Expect {
  fullname: string;
  namespace: string;
  webhookUrl: string;
  controllerReplicas: number;
  webhookReplicas: number;
  tlsSecret: string;
  certManager: "self-signed" | { issuer: string; kind: string } | false;
  /** DNS names or IPs the serving certificate must carry besides the in-cluster ones. */
  extraSans: string[];
  kubeconfigSecrets: { controller: string; webhook: string; key: string; rendered: boolean };
  antiAffinity: "soft" | "hard" | "none";
  serviceType: string;
  metrics: boolean;
  serviceMonitor: boolean;
  /** The webhook's NetworkPolicy: where kcp may call from, and the namespace that may scrape; false: none. */
  networkPolicy: false | { cidrs: string[]; peers: number; metricsNamespace: string };
  /** The transport's limits the webhook's flags carry. */
  limits: TransportLimits;
  /** The shard origins the index may follow besides the dep-ctrl export's (--virtual-workspace-origins). */
  virtualWorkspaceOrigins?: string[];
  /** Each pod's image reference and pull policy. */
  images: Record<"controller" | "webhook", { image: string; pullPolicy: string }>;
}

const sharedImage = (image: string, pullPolicy = "IfNotPresent"): Expect["images"] => ({
  controller: { image, pullPolicy },
  webhook: { image, pullPolicy },
});
/** The Go original's shape: one relocated image per binary (deploy/chart/ci/original-shape-*-values.yaml). */
const originalImages = (pullPolicy: string): Expect["images"] => ({
  controller: { image: "registry.airgap.example/opendefense/dependency-controller:0.1.0", pullPolicy },
  webhook: { image: "registry.airgap.example/opendefense/dependency-webhook:0.1.0", pullPolicy },
});

/** A release from values in the Go original's shape (deploy/chart/ci/original-shape-<file>-values.yaml). */
function originalShape(
  what: string,
  file: string,
  differs: Pick<Expect, "tlsSecret" | "certManager" | "images">,
): (typeof CONFIGS)[number] {
  const values = `ci/original-shape-${file}-values.yaml`;
  return {
    name: `the Go original's shape: an image per binary, ${what} (${values})`,
    files: [path.join(CHART, values)],
    release: "dep-ctrl",
    expect: {
      fullname: "dep-ctrl-kcp-dependency-controller",
      namespace: "dependency-system",
      webhookUrl: "https://dep-ctrl-kcp-dependency-controller-webhook.dependency-system.svc",
      controllerReplicas: 1,
      webhookReplicas: 2,
      extraSans: [],
      kubeconfigSecrets: {
        controller: "kcp-controller-kubeconfig",
        webhook: "kcp-webhook-kubeconfig",
        key: "kubeconfig",
        rendered: false,
      },
      antiAffinity: "soft",
      serviceType: "ClusterIP",
      metrics: true,
      serviceMonitor: false,
      networkPolicy: { cidrs: ["10.20.0.0/16"], peers: 0, metricsNamespace: "" },
      limits: DEFAULT_LIMITS,
      ...differs,
    },
  };
}

const CONFIGS: { name: string; files: string[]; release: string; expect: Expect }[] = [
  {
    name: "default values and kcp's addresses (ci/minimal-values.yaml)",
    files: [path.join(CHART, "ci/minimal-values.yaml")],
    release: "kdc",
    expect: {
      fullname: "kdc-kcp-dependency-controller",
      namespace: "kcp-deps",
      webhookUrl: "https://kdc-kcp-dependency-controller-webhook.kcp-deps.svc",
      controllerReplicas: 1,
      webhookReplicas: 2,
      tlsSecret: "kdc-kcp-dependency-controller-webhook-tls",
      certManager: "self-signed",
      extraSans: [],
      kubeconfigSecrets: {
        controller: "kdc-kcp-dependency-controller-controller-kubeconfig",
        webhook: "kdc-kcp-dependency-controller-webhook-kubeconfig",
        key: "kubeconfig",
        rendered: false,
      },
      antiAffinity: "soft",
      serviceType: "ClusterIP",
      metrics: true,
      serviceMonitor: false,
      networkPolicy: { cidrs: ["10.20.0.0/16"], peers: 0, metricsNamespace: "" },
      limits: DEFAULT_LIMITS,
      images: sharedImage("kcp-dependency-controller:0.1.0"),
    },
  },
  {
    name: "several replicas, cert-manager ClusterIssuer, external URL, ServiceMonitor (ci/ha-cert-manager-values.yaml)",
    files: [path.join(CHART, "ci/ha-cert-manager-values.yaml")],
    release: "kcp-dependency-controller",
    expect: {
      fullname: "kcp-dependency-controller",
      namespace: "platform",
      webhookUrl: "https://dependency-webhook.example.com:8443",
      controllerReplicas: 2,
      webhookReplicas: 3,
      tlsSecret: "kcp-dependency-controller-webhook-tls",
      certManager: { issuer: "platform-ca", kind: "ClusterIssuer" },
      extraSans: ["dependency-webhook.example.com", "dependency-webhook.internal.example.com"],
      kubeconfigSecrets: {
        controller: "kcp-dependency-controller-controller-kubeconfig",
        webhook: "dependency-webhook-kcp",
        key: "kubeconfig",
        rendered: true,
      },
      antiAffinity: "hard",
      serviceType: "LoadBalancer",
      metrics: true,
      serviceMonitor: true,
      networkPolicy: { cidrs: ["10.20.0.0/16"], peers: 1, metricsNamespace: "monitoring" },
      limits: {
        maxConcurrentReviews: 32,
        maxConcurrentRuleReviews: 4,
        maxQueuedReviews: 128,
        maxConnections: 512,
        bodyTimeoutMs: 5_000,
        minBodyBytesPerSecond: 65_536,
      },
      virtualWorkspaceOrigins: ["https://shard-0.kcp.example.com:6443", "https://shard-1.kcp.example.com:6443"],
      images: sharedImage(
        "registry.example.com/platform/kcp-dependency-controller@sha256:0000000000000000000000000000000000000000000000000000000000000000",
      ),
    },
  },
  {
    name: "existing TLS Secret, NodePort, no metrics Services, NetworkPolicy opted out (ci/existing-secret-values.yaml)",
    files: [path.join(CHART, "ci/existing-secret-values.yaml")],
    release: "deps",
    expect: {
      fullname: "deps-kcp-dependency-controller",
      namespace: "deps",
      webhookUrl: "https://203.0.113.10:30443",
      controllerReplicas: 1,
      webhookReplicas: 2,
      tlsSecret: "dependency-webhook-tls",
      certManager: false,
      extraSans: [],
      kubeconfigSecrets: {
        controller: "kcp-controller-kubeconfig",
        webhook: "kcp-webhook-kubeconfig",
        key: "config",
        rendered: false,
      },
      antiAffinity: "none",
      serviceType: "NodePort",
      metrics: false,
      serviceMonitor: false,
      networkPolicy: false,
      limits: DEFAULT_LIMITS,
      images: sharedImage("kcp-dependency-controller:0.1.0"),
    },
  },
  originalShape("an existing TLS Secret", "existing-secret", {
    tlsSecret: "dependency-webhook-tls",
    certManager: false,
    images: originalImages("Always"),
  }),
  originalShape("an issuer named alone", "cert-manager", {
    tlsSecret: "dep-ctrl-kcp-dependency-controller-webhook-tls",
    certManager: { issuer: "platform-issuer", kind: "ClusterIssuer" },
    images: originalImages("IfNotPresent"),
  }),
];

/** The checks every Deployment must pass: hardened, probed on its health port, mounts that exist. */
function checkDeployment(
  d: IDeployment,
  component: "controller" | "webhook",
): { args: string[]; pod: IPodTemplateSpec } {
  const pod = must(d.spec?.template, "pod template");
  const labels = pod.metadata?.labels;
  assert.ok(selects(d.spec?.selector.matchLabels, labels), "selector matches the pod labels");
  assert.equal(labels?.["app.kubernetes.io/component"], component);
  const spec = must(pod.spec, "pod spec");
  assert.equal(spec.automountServiceAccountToken, false, "no cluster token in the pod");
  assert.equal(spec.securityContext?.runAsNonRoot, true);
  assert.equal(spec.securityContext?.seccompProfile?.type, "RuntimeDefault");
  assert.equal(spec.containers.length, 1);
  const c = must(spec.containers[0], "container");
  assert.deepEqual(c.command, imageCommand(component));
  assert.ok(existsSync(path.join(REPO, `src/cmd/${component}.ts`)), "the command's source exists");
  assert.equal(c.securityContext?.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext?.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext?.runAsNonRoot, true);
  assert.deepEqual(c.securityContext?.capabilities?.drop, ["ALL"]);
  assert.ok(c.resources?.requests?.["cpu"] && c.resources.requests["memory"], "resource requests set");
  assert.ok(c.resources?.limits?.["memory"], "memory limit set");
  const args = must(c.args, "args");
  const healthPort = Number(/:(\d+)$/.exec(flag(args, "health-probe-bind-address") ?? "")?.[1]);
  const health = c.ports?.find((p) => p.name === "health");
  assert.equal(health?.containerPort, healthPort, "the health port is the one the binary listens on");
  assert.deepEqual(c.livenessProbe?.httpGet, { path: "/healthz", port: "health" });
  assert.deepEqual(c.readinessProbe?.httpGet, { path: "/readyz", port: "health" });
  const volumes = new Set((spec.volumes ?? []).map((v) => v.name));
  for (const m of c.volumeMounts ?? []) assert.ok(volumes.has(m.name), `volume ${m.name} exists`);
  assert.ok(
    c.volumeMounts?.some((m) => m.mountPath === "/tmp"),
    "a writable /tmp beside the read-only root",
  );
  return { args, pod };
}

/** The Secret volume behind a file path the container reads, as {secretName, key}. */
function secretFileSource(spec: IPodSpec | undefined, file: string | undefined): { secretName: string; key: string } {
  const c = spec?.containers[0];
  const mount = c?.volumeMounts?.find((m) => file?.startsWith(`${m.mountPath}/`));
  assert.ok(mount && file, `${file} is on a mounted volume`);
  const volume = spec?.volumes?.find((v) => v.name === mount.name);
  const rel = file.slice(mount.mountPath.length + 1);
  const item = volume?.secret?.items?.find((i) => i.path === rel);
  assert.ok(item, `${file} is an item of a Secret volume`);
  return { secretName: volume?.secret?.secretName ?? "", key: item.key };
}

for (const config of CONFIGS) {
  describe(`helm chart: ${config.name}`, () => {
    const e = config.expect;
    let objects: KObject[] = [];
    const name = (suffix: string): string => `${e.fullname}-${suffix}`;
    before(() => {
      objects = render(config.release, e.namespace, config.files);
    });

    it("passes helm lint --strict", () => {
      const r = helm(["lint", "--strict", CHART, ...config.files.flatMap((f) => ["-f", f])]);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    });

    it("renders objects that validate against the Kubernetes schemas", () => {
      assert.deepEqual(schemaErrors(objects), []);
      const kinds = objects.map((o) => o.kind).sort();
      const expected = [
        "Deployment",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
        "ServiceAccount",
        ...(e.metrics ? ["Service", "Service"] : []),
        ...(e.serviceMonitor ? ["ServiceMonitor"] : []),
        ...(e.networkPolicy ? ["NetworkPolicy"] : []),
        ...(e.kubeconfigSecrets.rendered ? ["Secret", "Secret"] : []),
        ...(e.certManager ? ["Certificate"] : []),
        ...(e.certManager === "self-signed" ? ["Certificate", "Issuer", "Issuer"] : []),
      ].sort();
      assert.deepEqual(kinds, expected);
      for (const o of objects) {
        assert.equal(o.metadata.namespace, e.namespace, `${o.kind}/${o.metadata.name} namespace`);
        assert.equal(o.metadata.labels?.["app.kubernetes.io/managed-by"], "Helm");
        if (o.kind === "Service") assert.ok(o.metadata.name.length <= 63, "Service names are DNS labels");
      }
    });

    it("controller: flags its binary accepts, webhook URL and CA from the chart, leader election", () => {
      const d = one(objects, "Deployment", name("controller"));
      assert.equal(d.spec?.replicas, e.controllerReplicas);
      const { args, pod } = checkDeployment(d, "controller");
      const parsed = parseConfig(args, {});
      assert.notEqual(parsed, "help");
      if (parsed === "help") return;
      assert.equal(parsed.webhookUrl, e.webhookUrl);
      assert.equal(parsed.leaderElect, true);
      assert.deepEqual(secretFileSource(pod.spec, parsed.caBundleFile), { secretName: e.tlsSecret, key: "ca.crt" });
      assert.deepEqual(secretFileSource(pod.spec, parsed.kubeconfig), {
        secretName: e.kubeconfigSecrets.controller,
        key: e.kubeconfigSecrets.key,
      });
    });

    it("webhook: replicas, rollout, anti-affinity, serving certificate and kubeconfig mounts", () => {
      const d = one(objects, "Deployment", name("webhook"));
      assert.equal(d.spec?.replicas, e.webhookReplicas);
      assert.ok(e.webhookReplicas >= 2);
      assert.equal(d.spec?.strategy?.rollingUpdate?.maxUnavailable, 0, "a rollout never drops a ready replica");
      const { args, pod } = checkDeployment(d, "webhook");
      const parsed = parseWebhookConfig(args, {});
      assert.notEqual(parsed, "help");
      if (parsed === "help") return;
      assert.deepEqual(parsed.limits, e.limits, "the transport's limits from the chart's values");
      assert.deepEqual(parsed.virtualWorkspaceOrigins, e.virtualWorkspaceOrigins, "the shard origins from the values");
      assert.deepEqual(secretFileSource(pod.spec, parsed.tls.certFile), { secretName: e.tlsSecret, key: "tls.crt" });
      assert.deepEqual(secretFileSource(pod.spec, parsed.tls.keyFile), { secretName: e.tlsSecret, key: "tls.key" });
      assert.deepEqual(secretFileSource(pod.spec, parsed.kubeconfig), {
        secretName: e.kubeconfigSecrets.webhook,
        key: e.kubeconfigSecrets.key,
      });
      const anti = pod.spec?.affinity?.podAntiAffinity;
      if (e.antiAffinity === "none") {
        assert.equal(anti, undefined);
        return;
      }
      const terms =
        e.antiAffinity === "hard"
          ? anti?.requiredDuringSchedulingIgnoredDuringExecution
          : anti?.preferredDuringSchedulingIgnoredDuringExecution?.map((t) => t.podAffinityTerm);
      const term = must(terms?.[0], `${e.antiAffinity} anti-affinity`);
      assert.equal(term.topologyKey, "kubernetes.io/hostname");
      assert.ok(
        selects(term.labelSelector?.matchLabels, pod.metadata?.labels),
        "anti-affinity selects the webhook pods",
      );
    });

    it("each pod runs the image its values name", () => {
      for (const component of ["controller", "webhook"] as const) {
        const c = one(objects, "Deployment", name(component)).spec?.template.spec?.containers[0];
        assert.deepEqual({ image: c?.image, pullPolicy: c?.imagePullPolicy }, e.images[component], component);
      }
    });

    it("webhook Service and PodDisruptionBudget select the webhook pods", () => {
      const pod = must(one(objects, "Deployment", name("webhook")).spec?.template, "webhook pod");
      const svc = one(objects, "Service", name("webhook"));
      assert.equal(svc.spec?.type, e.serviceType);
      assert.ok(selects(svc.spec?.selector, pod.metadata?.labels));
      assert.equal(svc.spec?.selector?.["app.kubernetes.io/component"], "webhook");
      const target = svc.spec?.ports?.[0]?.targetPort;
      assert.equal(target, "https");
      assert.ok(pod.spec?.containers[0]?.ports?.some((p) => p.name === target));
      const pdb = one(objects, "PodDisruptionBudget", name("webhook"));
      assert.ok(selects(pdb.spec?.selector?.matchLabels, pod.metadata?.labels));
      const minAvailable = Number(pdb.spec?.minAvailable);
      assert.ok(minAvailable >= 1 && minAvailable < e.webhookReplicas, "a drain keeps a replica and can proceed");
    });

    it("webhook NetworkPolicy: the webhook port only from kcp, the health port only from the metrics namespace", () => {
      const policies = all(objects, "NetworkPolicy");
      const np = e.networkPolicy;
      if (!np) {
        assert.equal(policies.length, 0);
        return;
      }
      const pod = must(one(objects, "Deployment", name("webhook")).spec?.template, "webhook pod");
      const policy = one(objects, "NetworkPolicy", name("webhook"));
      assert.ok(selects(policy.spec?.podSelector?.matchLabels, pod.metadata?.labels), "selects the webhook pods");
      assert.equal(
        selects(
          policy.spec?.podSelector?.matchLabels,
          one(objects, "Deployment", name("controller")).spec?.template.metadata?.labels,
        ),
        false,
        "not the controller's",
      );
      assert.deepEqual(policy.spec?.policyTypes, ["Ingress"]);
      const ports = new Map((pod.spec?.containers[0]?.ports ?? []).map((p) => [p.name, p.containerPort]));
      const rules = policy.spec?.ingress ?? [];
      assert.equal(rules.length, np.metricsNamespace ? 2 : 1, "no other ingress rule");
      for (const rule of rules) {
        assert.equal(rule.ports?.length, 1);
        assert.ok(ports.has(String(rule.ports?.[0]?.port)), `port ${rule.ports?.[0]?.port} is a container port`);
        assert.ok((rule.from ?? []).length > 0, "every rule names its sources (an empty from would allow everyone)");
      }
      const kcp = must(
        rules.find((r) => r.ports?.[0]?.port === "https"),
        "the webhook-port rule",
      );
      assert.deepEqual(
        kcp.from?.flatMap((f) => (f.ipBlock ? [f.ipBlock.cidr] : [])),
        np.cidrs,
      );
      assert.equal(kcp.from?.filter((f) => !f.ipBlock).length, np.peers);
      if (np.metricsNamespace) {
        const metrics = must(
          rules.find((r) => r.ports?.[0]?.port === "health"),
          "the health-port rule",
        );
        assert.deepEqual(metrics.from, [
          { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": np.metricsNamespace } } },
        ]);
      }
    });

    it("serving certificate: issued into the mounted Secret, for the names kcp calls", () => {
      const certs = all(objects, "Certificate").filter((c) => !c.spec?.isCA);
      if (!e.certManager) {
        assert.equal(certs.length, 0);
        return;
      }
      assert.equal(certs.length, 1);
      const spec = must(certs[0]?.spec, "Certificate spec");
      assert.equal(spec.secretName, e.tlsSecret);
      const sans = [...(spec.dnsNames ?? []), ...(spec.ipAddresses ?? [])];
      const host = `${name("webhook")}.${e.namespace}.svc`;
      for (const want of [host, ...e.extraSans]) assert.ok(sans.includes(want), `certificate names ${want}`);
      assert.ok(sans.includes(new URL(e.webhookUrl).hostname), "the host of the webhook URL is in the certificate");
      if (e.certManager === "self-signed") {
        const issuer = one(objects, "Issuer", spec.issuerRef.name);
        const caCert = must(
          all(objects, "Certificate").find((c) => c.spec?.isCA),
          "CA Certificate",
        );
        assert.equal(issuer.spec?.ca?.secretName, caCert.spec?.secretName, "the CA Issuer signs with the CA");
        assert.equal(caCert.spec?.privateKey?.rotationPolicy, "Never", "CA renewals keep the key");
        assert.ok(one(objects, "Issuer", caCert.spec?.issuerRef.name ?? "").spec?.selfSigned, "a self-signed root");
      } else {
        assert.deepEqual({ issuer: spec.issuerRef.name, kind: spec.issuerRef.kind }, e.certManager);
      }
    });

    it("kubeconfig Secrets: rendered from values with the key the pods read, or left to the user", () => {
      const secrets = all(objects, "Secret");
      if (!e.kubeconfigSecrets.rendered) {
        assert.equal(secrets.length, 0);
        return;
      }
      for (const secretName of [e.kubeconfigSecrets.controller, e.kubeconfigSecrets.webhook]) {
        const data = must(one(objects, "Secret", secretName).data?.[e.kubeconfigSecrets.key], `${secretName} data`);
        const kc = parseYaml(Buffer.from(data, "base64").toString("utf8")) as {
          clusters: { cluster: { server: string } }[];
        };
        assert.match(kc.clusters[0]?.cluster.server ?? "", /\/clusters\/root:dep-ctrl$/);
      }
    });

    it("metrics Services and the ServiceMonitor reach both health ports", () => {
      const services = all(objects, "Service").filter((s) => nameOf(s).endsWith("-metrics"));
      if (!e.metrics) {
        assert.equal(services.length, 0);
        return;
      }
      assert.equal(services.length, 2);
      for (const component of ["controller", "webhook"]) {
        const pod = one(objects, "Deployment", name(component)).spec?.template;
        const svc = one(objects, "Service", name(`${component}-metrics`));
        assert.ok(selects(svc.spec?.selector, pod?.metadata?.labels), `${component} metrics Service selects its pods`);
        assert.equal(svc.spec?.ports?.[0]?.targetPort, "health");
        assert.equal(svc.spec?.ports?.[0]?.name, "metrics");
      }
      const monitors = all(objects, "ServiceMonitor");
      assert.equal(monitors.length, e.serviceMonitor ? 1 : 0);
      for (const m of monitors) {
        for (const svc of services) assert.ok(selects(m.spec.selector.matchLabels, svc.metadata?.labels));
        assert.equal(m.spec.endpoints?.[0]?.port, "metrics");
      }
    });
  });
}

function valuesFile(name: string, text: string): string {
  const file = path.join(tmp, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

describe("helm chart: the Go original's per-binary image keys", () => {
  const KCP = "  networkPolicy:\n    kcpCIDRs: [10.0.0.0/8]\n";
  const DIGEST = (c: string): string => `sha256:${c.repeat(64)}`;
  const images = (values: string): Record<string, string | undefined> => {
    const objects = render("kdc", "ns", [valuesFile("images", values)]);
    return Object.fromEntries(
      (["controller", "webhook"] as const).map((c) => [
        c,
        one(objects, "Deployment", `kdc-kcp-dependency-controller-${c}`).spec?.template.spec?.containers[0]?.image,
      ]),
    );
  };

  it("a binary's own pin wins over the shared one; its repository keeps the shared digest", () => {
    const shared = `image:\n  repository: reg.example/kdc\n  digest: ${DIGEST("a")}\n`;
    assert.deepEqual(
      images(
        `${shared}controller:\n  image:\n    repository: airgap.example/kdc\nwebhook:\n  image:\n    tag: "9.9"\n${KCP}`,
      ),
      { controller: `airgap.example/kdc@${DIGEST("a")}`, webhook: "reg.example/kdc:9.9" },
    );
    assert.deepEqual(
      images(
        `${shared}controller:\n  image:\n    tag: "9.9"\n    digest: ${DIGEST("b")}\nwebhook:\n  image: {}\n${KCP}`,
      ),
      { controller: `reg.example/kdc@${DIGEST("b")}`, webhook: `reg.example/kdc@${DIGEST("a")}` },
    );
  });

  it("renders values from before the keys existed (a release upgraded with --reuse-values)", () => {
    const chart = path.join(tmp, "chart-without-image-keys");
    cpSync(CHART, chart, { recursive: true });
    const values = parseYaml(readFileSync(path.join(chart, "values.yaml"), "utf8")) as Record<
      string,
      { image?: unknown }
    >;
    delete values["controller"]?.image;
    delete values["webhook"]?.image;
    writeFileSync(path.join(chart, "values.yaml"), stringifyYaml(values));
    const r = helm(["template", "kdc", chart, "-f", path.join(CHART, "ci/minimal-values.yaml")]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal([...r.stdout.matchAll(/image: kcp-dependency-controller:0\.1\.0$/gm)].length, 2);
  });
});

describe("helm chart: the provider initializer (controller.providerInitializer)", () => {
  const KCP = "webhook:\n  networkPolicy:\n    kcpCIDRs: [10.0.0.0/8]\n";
  const RBAC_FILE = path.join(REPO, "deploy/rbac/provider-initializer.yaml");
  const on = (type: string): string =>
    `controller:\n  providerInitializer:\n    workspaceType: ${type}\n    webhookUser: dependency-webhook\n${KCP}`;
  /** The controller's parsed flags and the install notes' initializer step, from one set of values. */
  function release(values: string): { flags: ReturnType<typeof parseConfig>; notes: string } {
    const file = valuesFile("initializer", values);
    const d = one(render("kdc", "ns", [file]), "Deployment", "kdc-kcp-dependency-controller-controller");
    // helm template leaves NOTES.txt out; a copy of the chart renders its initializer step into a ConfigMap.
    const chart = path.join(tmp, "chart-with-notes-probe");
    if (!existsSync(chart)) {
      cpSync(CHART, chart, { recursive: true });
      writeFileSync(
        path.join(chart, "templates/notes-probe.yaml"),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include "kdc.providerInitializerNotes" . | quote }}\n',
      );
    }
    const r = helm(["template", "kdc", chart, "-f", file, "--show-only", "templates/notes-probe.yaml"]);
    assert.equal(r.status, 0, r.stderr);
    const notes = (parseYaml(r.stdout) as { data: { notes: string } }).data.notes;
    return { flags: parseConfig(d.spec?.template.spec?.containers[0]?.args ?? [], {}), notes };
  }
  /** The ClusterRole rules of the RBAC file, after the notes' own sed (if any) ran over it. */
  function fileRules(notes: string): unknown {
    const sed = /^\s*sed '(.*)' \|$/m.exec(notes)?.[1];
    const text = sed ? execFileSync("sed", [sed, RBAC_FILE], { encoding: "utf8" }) : readFileSync(RBAC_FILE, "utf8");
    const docs = parseAllDocuments(text).map((d) => d.toJS() as KObject | null);
    return must(
      docs.find((o) => o?.kind === "ClusterRole"),
      "the file's ClusterRole",
    )["rules"];
  }
  const notesRules = (notes: string): unknown => {
    const block = /^ {2}rules:\n((?: {4}.*\n)+)/m.exec(notes)?.[1];
    return parseYaml(must(block, `a rules block in the notes:\n${notes}`).replace(/^ {4}/gm, ""));
  };

  it("is off by default: no initializer flags, no notes step", () => {
    const { flags, notes } = release(KCP);
    assert.ok(flags !== "help" && flags.providerWorkspaceType === undefined && flags.webhookUser === undefined);
    assert.equal(notes.trim(), "");
  });

  it("passes both flags the controller accepts, and the notes give the file's right for the type", () => {
    for (const [type, path_, name] of [
      ["root:dependency-provider", "root", "dependency-provider"],
      ["root:platform:arc-provider", "root:platform", "arc-provider"],
    ] as const) {
      const { flags, notes } = release(on(type));
      assert.ok(flags !== "help");
      assert.deepEqual(flags.providerWorkspaceType, { path: path_, name }, type);
      assert.equal(flags.webhookUser, "dependency-webhook");
      const rules = notesRules(notes);
      assert.deepEqual(rules, fileRules(notes), `${type}: the notes' right is the one their command applies`);
      assert.deepEqual((rules as { resourceNames?: string[] }[])[0]?.resourceNames, [name], type);
      assert.match(notes, new RegExp(`kubectl --server="\\$KCP_URL/clusters/${path_}" apply -f -`));
    }
  });
});

describe("helm chart: the webhook port is closed by default", () => {
  it("refuses to render the default values: they do not say where kcp calls from", () => {
    const r = helm(["template", "kdc", CHART]);
    assert.notEqual(r.status, 0, "rendering must fail");
    assert.match(r.stderr, /webhook\.networkPolicy: the webhook port is closed to everyone but kcp/);
  });

  it("renders the NetworkPolicy with kcp's addresses, and none only when explicitly opted out", () => {
    const closed = render("kdc", "ns", [path.join(CHART, "ci/minimal-values.yaml")]);
    const policy = one(closed, "NetworkPolicy", "kdc-kcp-dependency-controller-webhook");
    assert.equal(policy.spec?.ingress?.length, 1, "the webhook port from kcp; the health port from nobody");
    const open = render("kdc", "ns", [valuesFile("opt-out", "webhook:\n  networkPolicy:\n    enabled: false\n")]);
    assert.deepEqual(all(open, "NetworkPolicy"), []);
  });

  it("creates a PriorityClass for the webhook pods when asked", () => {
    const file = valuesFile(
      "priority",
      "webhook:\n  priorityClass:\n    create: true\n  networkPolicy:\n    kcpCIDRs: [10.0.0.0/8]\n",
    );
    const objects = render("kdc", "ns", [file]);
    const pc = objects.find((o) => o.kind === "PriorityClass");
    assert.ok(pc, "a PriorityClass is rendered");
    assert.deepEqual(schemaErrors([pc]), []);
    assert.equal(pc.value, 1_000_000);
    const pod = one(objects, "Deployment", "kdc-kcp-dependency-controller-webhook").spec?.template.spec;
    assert.equal(pod?.priorityClassName, pc.metadata.name);
    assert.equal(
      one(objects, "Deployment", "kdc-kcp-dependency-controller-controller").spec?.template.spec?.priorityClassName,
      undefined,
    );
  });

  it("requests the webhook memory the sizing rule in values.yaml gives, below the limit", () => {
    const objects = render("kdc", "ns", [path.join(CHART, "ci/minimal-values.yaml")]);
    const c = one(objects, "Deployment", "kdc-kcp-dependency-controller-webhook").spec?.template.spec?.containers[0];
    const mib = (q: unknown): number => Number(/^(\d+)Mi$/.exec(String(q))?.[1]);
    const request = mib(c?.resources?.requests?.["memory"]);
    // 96 MiB with 100 rules, 2 KiB per dependent for 60,000 dependents, 32 MiB of reviews in flight.
    assert.ok(request >= 96 + Math.ceil((60_000 * 2) / 1024) + 32, `request ${request} Mi follows the rule`);
    assert.ok(mib(c?.resources?.limits?.["memory"]) >= 2 * request, "the limit leaves room for a re-list's peak");
  });
});

describe("helm chart: the offline schema check", () => {
  it("rejects what a cluster would reject (a control for the checks above)", () => {
    const objects = render("kdc", "ns", [path.join(CHART, "ci/minimal-values.yaml")]);
    const broken = structuredClone(one(objects, "Deployment", "kdc-kcp-dependency-controller-webhook"));
    const port = must(broken.spec?.template.spec?.containers[0]?.ports?.[0], "a container port");
    (port as { containerPort: unknown }).containerPort = "https";
    const unknown = { apiVersion: "example.com/v1", kind: "Unknown", metadata: { name: "x" } };
    const errors = schemaErrors([broken as unknown as KObject, unknown]);
    assert.equal(errors.length, 2);
    assert.match(errors[0] ?? "", /containerPort must be integer/);
    assert.match(errors[1] ?? "", /no schema for example\.com\/v1 Unknown/);
  });
});

describe("helm chart: wrong values fail with a message that says what to change", () => {
  const cases: { name: string; values: string; message: RegExp }[] = [
    {
      name: "a typo in a key",
      values: "webhook:\n  replica: 3\n",
      message: /additional properties 'replica' not allowed/,
    },
    {
      name: "no serving certificate configured",
      values: "webhook:\n  tls:\n    certManager:\n      enabled: false\n",
      message: /webhook\.tls: the webhook needs a serving certificate/,
    },
    {
      name: "an existing Secret and cert-manager at once",
      values: "webhook:\n  tls:\n    existingSecret: my-tls\n    certManager:\n      enabled: true\n",
      message: /existingSecret \("my-tls"\) and certManager\.enabled are exclusive/,
    },
    {
      name: "controller replicas without leader election",
      values: "controller:\n  replicas: 2\n  leaderElection:\n    enabled: false\n",
      message: /controller\.replicas > 1 needs controller\.leaderElection\.enabled=true/,
    },
    { name: "a single webhook replica", values: "webhook:\n  replicas: 1\n", message: /webhook\/replicas.*minimum/ },
    {
      name: "a plain-http webhook URL",
      values: "webhook:\n  externalURL: http://webhook.example.com\n",
      message: /webhook\/externalURL.*does not match pattern/,
    },
    {
      name: "a plain-http kcp base URL",
      values: "webhook:\n  kcpBaseURL: http://kcp.example.com:6443\n",
      message: /webhook\/kcpBaseURL.*does not match pattern/,
    },
    {
      name: "a virtual-workspace origin with a path",
      values: "webhook:\n  virtualWorkspaceOrigins: [https://shard-1.example.com:6443/services]\n",
      message: /webhook\/virtualWorkspaceOrigins\/0.*does not match pattern/,
    },
    {
      name: "a PodDisruptionBudget that blocks every drain",
      values: "webhook:\n  replicas: 2\n  podDisruptionBudget:\n    minAvailable: 2\n",
      message: /minAvailable=2 with webhook\.replicas=2 would block every node drain/,
    },
    { name: "an unknown log level", values: "logLevel: verbose\n", message: /logLevel/ },
    // Keys of the Go original's chart this chart does not take (docs/compatibility.md says what replaces each), and an
    // image key it never had, are refused by name, never ignored.
    ...[
      { at: "", key: "kcpBaseHost", values: "kcpBaseHost: https://kcp.example.com:6443\n" },
      { at: "/webhook", key: "tlsCertDir", values: "webhook:\n  tlsCertDir: /etc/webhook-tls\n" },
      { at: "/controller", key: "healthProbeBindAddress", values: 'controller:\n  healthProbeBindAddress: ":8081"\n' },
      { at: "/webhook/image", key: "registry", values: "webhook:\n  image:\n    registry: registry.airgap.example\n" },
    ].map(({ at, key, values }) => ({
      name: `the unknown key ${at}/${key}`,
      values,
      message: new RegExp(`at '${at}': additional properties '${key}' not allowed`),
    })),
    {
      name: "a provider workspace type without the webhook user",
      values: "controller:\n  providerInitializer:\n    workspaceType: root:dependency-provider\n",
      message: /controller\.providerInitializer\.workspaceType needs controller\.providerInitializer\.webhookUser/,
    },
    {
      name: "a provider workspace type without its workspace path",
      values: "controller:\n  providerInitializer:\n    workspaceType: dependency-provider\n    webhookUser: hook\n",
      message: /controller\/providerInitializer\/workspaceType.*does not match pattern/,
    },
    {
      name: "a LoadBalancer open to every address",
      values: "webhook:\n  service:\n    type: LoadBalancer\n",
      message: /webhook\.service\.type=LoadBalancer needs webhook\.service\.loadBalancerSourceRanges/,
    },
    {
      name: "a source range that is not a CIDR",
      values: "webhook:\n  service:\n    type: LoadBalancer\n    loadBalancerSourceRanges: [kcp.example.com]\n",
      message: /loadBalancerSourceRanges\/0.*does not match pattern/,
    },
    {
      name: "no kcp addresses: the default NetworkPolicy would drop kcp's calls",
      values: "logLevel: info\n",
      message:
        /needs to know where kcp calls from\. List webhook\.networkPolicy\.kcpCIDRs .* or webhook\.networkPolicy\.kcpPeers .*opt out explicitly with webhook\.networkPolicy\.enabled=false/,
    },
    {
      name: "a NetworkPolicy with a metrics namespace but no kcp addresses",
      values: "webhook:\n  networkPolicy:\n    enabled: true\n    metricsNamespace: monitoring\n",
      message: /webhook\.networkPolicy: the webhook port is closed to everyone but kcp/,
    },
    {
      name: "a created PriorityClass and a named one at once",
      values: `webhook:\n  priorityClassName: high\n  priorityClass:\n    create: true\n  networkPolicy:\n    kcpCIDRs: [10.0.0.0/8]\n`,
      message: /webhook\.priorityClass\.create and webhook\.priorityClassName \("high"\) are exclusive/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const file = path.join(tmp, `${c.name.replace(/\W+/g, "-")}.yaml`);
      writeFileSync(file, c.values);
      const r = helm(["template", "kdc", CHART, "-f", file]);
      assert.notEqual(r.status, 0, "rendering must fail");
      assert.match(r.stderr, c.message);
    });
  }
});

describe("helm chart: values are documented", () => {
  interface Schema {
    type?: string;
    properties?: Record<string, Schema>;
    additionalProperties?: unknown;
  }
  const values = parseYaml(readFileSync(path.join(CHART, "values.yaml"), "utf8")) as unknown;
  const schema = JSON.parse(readFileSync(path.join(CHART, "values.schema.json"), "utf8")) as Schema;
  const readme = readFileSync(path.join(CHART, "README.md"), "utf8");
  /** Leaf paths of values.yaml (an empty map or a list is a leaf). */
  function leaves(v: unknown, prefix = ""): string[] {
    if (v === null || typeof v !== "object" || Array.isArray(v) || Object.keys(v).length === 0) return [prefix];
    return Object.entries(v).flatMap(([k, child]) => leaves(child, prefix ? `${prefix}.${k}` : k));
  }
  /** Paths the schema describes: it stops where an object is free-form (resources, affinity, ...). */
  function schemaPaths(s: Schema, prefix = ""): string[] {
    if (s.type !== "object" || !s.properties || s.additionalProperties !== false) return [prefix];
    return Object.entries(s.properties)
      .filter(([k]) => !(prefix === "" && k === "global"))
      .flatMap(([k, child]) => schemaPaths(child, prefix ? `${prefix}.${k}` : k));
  }
  const covers = (schemaPath: string, leaf: string): boolean =>
    leaf === schemaPath || leaf.startsWith(`${schemaPath}.`);

  it("values.schema.json describes every key of values.yaml, and nothing values.yaml lacks", () => {
    const described = schemaPaths(schema);
    const valueLeaves = leaves(values);
    assert.deepEqual(
      valueLeaves.filter((l) => !described.some((p) => covers(p, l))),
      [],
      "keys of values.yaml the schema does not describe",
    );
    assert.deepEqual(
      described.filter((p) => !valueLeaves.some((l) => covers(p, l))),
      [],
      "schema keys without a default in values.yaml",
    );
  });

  it("every value the schema describes has a row in the chart README", () => {
    assert.deepEqual(
      schemaPaths(schema).filter((p) => !readme.includes(`| \`${p}\``)),
      [],
    );
  });
});
