// The image as users deploy it. hack/image/build.sh builds it from the Dockerfile, unchanged, with buildah (where
// node:*-slim cannot be pulled, on a stand-in for that base: hack/image/base.sh), and the webhook and the controller
// then run from it against a real kcp the way the Helm chart's pods run them: the Deployments are rendered with helm
// (one of its webhook replicas runs, on this host's ports, the test kcp's identities as kubeconfig values, a TLS Secret made beside
// the chart), and each container's command and args (the controller's from the image's ENTRYPOINT, which its
// command must equal), env, user, groups, read-only root, Secret volumes and emptyDirs are applied by
// hack/image/run.sh (mount and PID namespaces, chroot into the mounted image; no container runtime works here).
// Then a protected delete is refused and, once its dependent is gone, allowed. The compute provider writes its rule
// and consumer1 creates and deletes with their own ServiceAccount tokens (kcp.md §9); kcp-admin only sets the
// topology up, as the platform operator.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { apply } from "../../tools/kcp/api.ts";
import { makeCerts } from "../../tools/kcp/certs.ts";
import { REPO_ROOT, startKcp, type Kcp } from "../../tools/kcp/harness.ts";
import { ManagedProcess, freePort, waitFor } from "../../tools/kcp/process.ts";
import { tenant, type Tenant } from "../../tools/kcp/tenant.ts";
import {
  IDENTITIES,
  PATHS,
  TOKENS,
  setupTopology,
  vmRule,
  type BinaryProcess,
  type Topology,
} from "../../tools/kcp/topology.ts";
import {
  VMS,
  VPCS,
  VWC_PATH,
  assertDenied,
  at,
  create,
  tryDelete,
  vm,
  vpc,
  waitForProtection,
  waitForVwc,
} from "./helpers.ts";

// ---------------------------------------------------------------------------------------------------------------
// A Deployment of the rendered chart, run from the image the way its pod would run, without Kubernetes: the
// container's command and args (or the image's ENTRYPOINT and CMD where the pod spec leaves them out), its env after
// the image's, runAsUser/runAsGroup/fsGroup, readOnlyRootFilesystem, Secret volumes (read-only files with the
// volume's mode, group fsGroup) and emptyDirs (tmpfs).

const HERE = path.join(REPO_ROOT, "hack/image");

export interface ImageConfig {
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  Env?: string[] | null;
  User?: string;
  WorkingDir?: string;
}

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; runAsUser?: number };
  volumeMounts?: { name: string; mountPath: string }[];
}

interface Volume {
  name: string;
  secret?: { secretName: string; defaultMode?: number; items?: { key: string; path: string }[] };
  emptyDir?: { sizeLimit?: string };
}

export interface PodSpec {
  securityContext?: { runAsUser?: number; runAsGroup?: number; fsGroup?: number };
  containers: Container[];
  volumes?: Volume[];
}

export interface Rendered {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: PodSpec } };
}

/** Runs a hack/ script and resolves its stdout's last line; its stderr (progress) goes to this process's stderr. */
export function runScript(script: string, args: string[] = [], timeoutMs = 30 * 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.trim().split("\n").at(-1) ?? "");
      else reject(new Error(`${script} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/** The image's OCI config from the store hack/image/build.sh builds into. */
export async function imageConfig(ref: string): Promise<ImageConfig> {
  const { stdout } = await promisify(execFile)("bash", [
    path.join(HERE, "buildah.sh"),
    "inspect",
    "--type",
    "image",
    ref,
  ]);
  return (JSON.parse(stdout) as { OCIv1: { config: ImageConfig } }).OCIv1.config;
}

/** `helm template` of deploy/chart with `values`; every document parsed. */
export async function renderChart(helmBin: string, chart: string, values: unknown, dir: string): Promise<Rendered[]> {
  const file = path.join(dir, "values.json");
  writeFileSync(file, JSON.stringify(values));
  const { stdout } = await promisify(execFile)(
    helmBin,
    ["template", "kdc", chart, "--namespace", "kdc-system", "-f", file],
    { maxBuffer: 16 << 20, env: { ...process.env, HELM_CACHE_HOME: dir } },
  );
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

export function podSpec(objects: Rendered[], deployment: string): PodSpec {
  const d = objects.find((o) => o.kind === "Deployment" && o.metadata.name === deployment);
  const spec = d?.spec?.template?.spec;
  if (!spec) throw new Error(`no Deployment ${deployment} in the rendered chart`);
  return spec;
}

/** Secrets by name: the rendered ones (data decoded) and `extra` (Secrets the user creates beside the chart). */
export function secrets(objects: Rendered[], extra: Record<string, Record<string, string>>) {
  const all = { ...extra };
  for (const o of objects.filter((x) => x.kind === "Secret" && x.data)) {
    all[o.metadata.name] = Object.fromEntries(
      Object.entries(o.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
    );
  }
  return all;
}

export interface PodOptions {
  image: string;
  config: ImageConfig;
  spec: PodSpec;
  secrets: Record<string, Record<string, string>>;
  dir: string;
  name: string;
  logFile: string;
}

/** The argv of the pod's (single) container, as Kubernetes resolves it against the image. */
export function containerArgv(c: Container, config: ImageConfig): string[] {
  if (c.command) return [...c.command, ...(c.args ?? [])];
  return [...(config.Entrypoint ?? []), ...(c.args ?? config.Cmd ?? [])];
}

/** hack/image/run.sh's arguments for the pod: user, read-only root, volumes, env, and the container's argv. */
export function runArgs(o: PodOptions, container: Container = o.spec.containers[0]!): string[] {
  const pod = o.spec.securityContext ?? {};
  const uid = container.securityContext?.runAsUser ?? pod.runAsUser ?? 0;
  const gid = pod.runAsGroup ?? uid;
  const args = ["--image", o.image, "--name", o.name, "--user", `${uid}:${gid}`, "--group", String(gid)];
  if (pod.fsGroup !== undefined && pod.fsGroup !== gid) args.push("--group", String(pod.fsGroup));
  if (container.securityContext?.readOnlyRootFilesystem) args.push("--read-only");
  args.push("--workdir", o.config.WorkingDir || "/");
  for (const m of container.volumeMounts ?? []) {
    const v = o.spec.volumes?.find((x) => x.name === m.name);
    if (v?.emptyDir) args.push("--tmpfs", `${m.mountPath}:${(v.emptyDir.sizeLimit ?? "64Mi").replace(/i$/, "")}`);
    else if (v?.secret) args.push("--volume", `${secretVolume(o, v.name, v.secret, pod.fsGroup)}:${m.mountPath}`);
    else throw new Error(`volume ${m.name}: only secret and emptyDir volumes are supported here`);
  }
  for (const e of [...(o.config.Env ?? []), ...(container.env ?? []).map((x) => `${x.name}=${x.value ?? ""}`)]) {
    args.push("--env", e);
  }
  return [...args, "--", ...containerArgv(container, o.config)];
}

/** A Secret volume's files in a host folder: the selected keys, the volume's mode, group fsGroup (as kubelet does). */
function secretVolume(o: PodOptions, volume: string, s: NonNullable<Volume["secret"]>, fsGroup?: number): string {
  const data = o.secrets[s.secretName];
  if (!data) throw new Error(`volume ${volume}: no Secret ${s.secretName}`);
  const dir = path.join(o.dir, `${o.name}-${volume}`);
  mkdirSync(dir, { recursive: true });
  for (const item of s.items ?? Object.keys(data).map((k) => ({ key: k, path: k }))) {
    const value = data[item.key];
    if (value === undefined) throw new Error(`Secret ${s.secretName} has no key ${item.key}`);
    const file = path.join(dir, item.path);
    writeFileSync(file, value);
    chmodSync(file, s.defaultMode ?? 0o644);
    if (fsGroup !== undefined) chownSync(file, 0, fsGroup);
  }
  return dir;
}

export function startPod(o: PodOptions): ManagedProcess {
  return new ManagedProcess("bash", [path.join(HERE, "run.sh"), ...runArgs(o)], o.logFile);
}

export interface ProcessFacts {
  uid: string;
  gid: string;
  noNewPrivs: string;
  capEff: string;
  rootMountOptions: string;
}

/** What the kernel says about the process whose command line contains `marker` (uid, no_new_privs, root mount). */
export function processFacts(marker: string): ProcessFacts | undefined {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const argv = cmdline.split("\0");
    if (!argv[0]?.endsWith("node") || !argv.includes(marker)) continue;
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)`, "m").exec(status)?.[1] ?? "";
    const rootMount = readFileSync(`/proc/${pid}/mountinfo`, "utf8")
      .split("\n")
      .map((l) => l.split(" "))
      .find((f) => f[4] === "/");
    return {
      uid: field("Uid"),
      gid: field("Gid"),
      noNewPrivs: field("NoNewPrivs"),
      capEff: field("CapEff"),
      rootMountOptions: rootMount?.[5] ?? "",
    };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// The journey.

const RUN_ID = `kdc-e2e-${process.pid}`;
const TLS_SECRET = "kdc-e2e-webhook-tls";
let kcp: Kcp | undefined;
let topo: Topology | undefined;
let image = "";
let config: ImageConfig = {};
let objects: Rendered[] = [];
let work = "";
const pods: Record<"webhook" | "controller", BinaryProcess | undefined> = { webhook: undefined, controller: undefined };
const ports = { webhook: 0, webhookHealth: 0, controllerHealth: 0 };
let failed = false;

const must = <T>(v: T | undefined, what: string): T => {
  if (v === undefined) throw new Error(`${what} did not start (see the before hook's error)`);
  return v;
};
/** The tenants (their own tokens), made in the before hook once kcp is up. */
const owners = new Map<string, Tenant>();
const owner = (p: string) => must(owners.get(p), `the tenant of ${p}`).client;
const consumer1 = () => owner(PATHS.consumer1);

async function startComponent(component: "webhook" | "controller", entrypointFromImage: boolean): Promise<void> {
  const spec = structuredClone(podSpec(objects, `kdc-kcp-dependency-controller-${component}`));
  const container = spec.containers[0]!;
  // The controller starts from the image's ENTRYPOINT (its pod spec's command must be exactly that, checked below);
  // the webhook from the command the chart gives it, as its pod does.
  if (entrypointFromImage) delete container.command;
  const k = must(kcp, "kcp");
  const opts: PodOptions = {
    image,
    config,
    spec,
    secrets: secrets(objects, {
      [TLS_SECRET]: Object.fromEntries(
        ["tls.crt", "tls.key", "ca.crt"].map((f) => [f, readFileSync(path.join(work, "tls", f), "utf8")]),
      ),
    }),
    dir: path.join(work, "volumes"),
    name: `${RUN_ID}-${component}`,
    logFile: path.join(k.rootDir, `image-${component}.log`),
  };
  const proc = startPod(opts);
  const health = component === "webhook" ? ports.webhookHealth : ports.controllerHealth;
  pods[component] = { proc, healthUrl: `http://127.0.0.1:${health}` };
  await waitPodReady(`${component} (image)`, pods[component], 120_000);
}

/** Waits for /readyz; fails at once when the container's process has exited (a wrong command does not wait 120 s). */
async function waitPodReady(name: string, pod: BinaryProcess, timeoutMs: number): Promise<void> {
  const outcome = await waitFor(
    `${name} /readyz`,
    async () => {
      if (!pod.proc.running) return "exited";
      const res = await fetch(`${pod.healthUrl}/readyz`).catch(() => undefined);
      return res?.status === 200 ? "ready" : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
  if (outcome === "exited") throw new Error(`${name} exited with code ${pod.proc.exitCode}:\n${pod.proc.logTail(20)}`);
}

before(async () => {
  // The build comes first: nothing else runs yet, so its minutes do not count against kcp's timeouts.
  image = await runScript(path.join(REPO_ROOT, "hack/image/build.sh"));
  config = await imageConfig(image);
  const helmBin = process.env["HELM_BIN"] || (await runScript(path.join(REPO_ROOT, "hack/helm/build.sh")));
  kcp = await startKcp({ tokens: TOKENS });
  work = path.join(kcp.rootDir, "image-e2e");
  mkdirSync(work, { recursive: true });
  topo = await setupTopology(kcp, { lookup: "index" });
  makeCerts(path.join(work, "tls"));
  ports.webhook = await freePort();
  ports.webhookHealth = await freePort();
  ports.controllerHealth = await freePort();
  const kubeconfig = (token: string, file: string) =>
    readFileSync(must(kcp, "kcp").kubeconfigFor(token, PATHS.depCtrl, file), "utf8");
  // The chart's own values: this host's ports, kcp's identities, a TLS Secret made beside it. One webhook replica runs.
  objects = await renderChart(
    helmBin,
    path.join(REPO_ROOT, "deploy/chart"),
    {
      controller: {
        healthPort: ports.controllerHealth,
        kubeconfig: { value: kubeconfig(IDENTITIES.controller.token, "image-controller.kubeconfig") },
      },
      webhook: {
        port: ports.webhook,
        healthPort: ports.webhookHealth,
        bindAddress: "127.0.0.1",
        externalURL: `https://127.0.0.1:${ports.webhook}`,
        kubeconfig: { value: kubeconfig(IDENTITIES.webhook.token, "image-webhook.kubeconfig") },
        tls: { existingSecret: TLS_SECRET, certManager: { enabled: false } },
        networkPolicy: { enabled: true, kcpCIDRs: ["127.0.0.1/32"] },
      },
    },
    work,
  );
  await startComponent("webhook", false);
  await startComponent("controller", true);
  for (const p of [PATHS.compute, PATHS.network, PATHS.consumer1])
    owners.set(p, await tenant(kcp, p, { name: "image-owner" }));
  await apply(owner(PATHS.compute), vmRule(topo.vars));
});

afterEach((t) => {
  if ((t as { passed?: boolean }).passed === false) failed = true;
});

after(async () => {
  if (failed) {
    for (const [name, p] of Object.entries(pods))
      process.stderr.write(`\n--- ${name} (image) log ---\n${p?.proc.logTail(40) ?? "(not started)"}\n`);
    process.stderr.write(`--- kcp log tail ---\n${kcp?.logTail(30) ?? ""}\n`);
  }
  await Promise.all(Object.values(pods).map((p) => p?.proc.stop() ?? Promise.resolve()));
  await kcp?.stop();
});

test("the image runs as the chart's pods ask: its user, its ENTRYPOINT, no npm or corepack", async () => {
  assert.equal(config.User, "1000:1000");
  const controller = podSpec(objects, "kdc-kcp-dependency-controller-controller");
  assert.deepEqual(
    controller.containers[0]?.command,
    config.Entrypoint,
    "the chart's controller command is the ENTRYPOINT",
  );
  for (const spec of [controller, podSpec(objects, "kdc-kcp-dependency-controller-webhook")]) {
    assert.equal(`${spec.securityContext?.runAsUser}:${spec.securityContext?.runAsGroup}`, config.User);
    assert.equal(spec.containers[0]?.securityContext?.readOnlyRootFilesystem, true);
  }
  const probe = await runScript(path.join(REPO_ROOT, "hack/image/run.sh"), [
    ...["--image", image, "--name", `${RUN_ID}-probe`, "--user", config.User ?? "", "--read-only"],
    ...(config.Env ?? []).flatMap((e) => ["--env", e]),
    "--",
    "node",
    "-p",
    `["npm","npx","corepack"].filter(c => require("fs").existsSync("/usr/local/bin/" + c)).join() || "none"`,
  ]);
  assert.equal(probe, "none", "the runtime has no npm, npx or corepack");
});

test("both processes run as uid/gid 1000, on a read-only root, without privileges", () => {
  for (const [name, port] of [
    ["webhook", ports.webhookHealth],
    ["controller", ports.controllerHealth],
  ] as const) {
    const facts = processFacts(`--health-probe-bind-address=:${port}`);
    assert.ok(facts, `the ${name}'s node process is running`);
    assert.equal(facts.uid, "1000", `${name} uid`);
    assert.equal(facts.gid, "1000", `${name} gid`);
    assert.equal(facts.noNewPrivs, "1", `${name} no_new_privs`);
    assert.equal(facts.capEff, "0000000000000000", `${name} capabilities`);
    assert.match(facts.rootMountOptions, /^ro(,|$)/, `${name} root mount`);
  }
});

test("a protected delete is refused by the image's webhook, then allowed once the dependent is gone", async () => {
  await waitForVwc(must(kcp, "kcp"), true);
  // The controller in the image wrote the chart's webhook.externalURL, and the chart's CA, into the configuration
  // the network provider reads in its workspace.
  const vwc = await owner(PATHS.network).get<{ webhooks: { clientConfig: { url: string; caBundle: string } }[] }>(
    VWC_PATH,
  );
  const client = vwc.webhooks[0]?.clientConfig;
  assert.ok(client, "the configuration has a webhook");
  assert.ok(client.url.startsWith(`https://127.0.0.1:${ports.webhook}/validate/`), client.url);
  assert.equal(
    Buffer.from(client.caBundle, "base64").toString(),
    readFileSync(path.join(work, "tls", "ca.crt"), "utf8"),
  );
  await create(consumer1(), vpc("image-vpc"), vm("image-vm", { vpc: "image-vpc" }));
  await waitForProtection(consumer1(), `${at(VPCS)}/image-vpc`, true);
  assertDenied(
    await tryDelete(consumer1(), `${at(VPCS)}/image-vpc`),
    /cannot delete vpcs\/image-vpc: still referenced by VirtualMachine\/image-vm$/,
  );
  assert.deepEqual(await tryDelete(consumer1(), `${at(VMS)}/image-vm`), { allowed: true });
  await waitForProtection(consumer1(), `${at(VPCS)}/image-vpc`, false);
  assert.deepEqual(await tryDelete(consumer1(), `${at(VPCS)}/image-vpc`), { allowed: true });
});
