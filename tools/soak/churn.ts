// The run's slower changes beside the workers: the soak provider's rule reshaped or recreated now and then, and one
// consumer workspace deleted part-way through.
import { type Consumer } from "./env.ts";
import { SOAK_PROVIDER, SOAK_RULE, serverRule, type ServerRuleShape } from "./provider.ts";
import type { Answer } from "./kube.ts";
import { sleep, type WorkloadOptions } from "./oplog.ts";

/** Rule churn on the soak provider's rule: drop or add the zone, change the subnet path, delete and recreate. */
export async function ruleChurner(o: WorkloadOptions, everyMs: [number, number]): Promise<void> {
  const { rng, log, conn } = o;
  const rules = `/clusters/${SOAK_PROVIDER}/apis/dependencies.opendefense.cloud/v1alpha1/dependencyrules`;
  const base = { worker: "rules", cluster: "", workspace: SOAK_PROVIDER, resource: "dependencyrules", namespace: "" };
  const applyShape = (shape: ServerRuleShape): Promise<Answer> =>
    log.send(
      conn,
      { ...base, kind: "rule-churn", name: `${SOAK_RULE}:${shape}` },
      "PATCH",
      `${rules}/${SOAK_RULE}?fieldManager=soak&force=true`,
      {
        body: serverRule(o.vars, shape),
        contentType: "application/apply-patch+yaml",
      },
    );
  while (!o.signal.aborted) {
    await sleep(rng.int(...everyMs), o.signal);
    if (o.signal.aborted) break;
    const action = rng.pick(["no-zone", "single-subnet", "full", "recreate"] as const);
    if (action === "recreate") {
      await log.send(
        conn,
        { ...base, kind: "rule-churn", name: `${SOAK_RULE}:delete` },
        "DELETE",
        `${rules}/${SOAK_RULE}`,
      );
      await sleep(rng.int(2000, 6000), o.signal);
      await applyShape("full");
    } else {
      await applyShape(action);
    }
  }
  await applyShape("full"); // leave the rule whole for the drain
}

/** Deletes one consumer workspace part-way through; workers stop using it first. */
export async function deleteWorkspaceLater(o: WorkloadOptions, c: Consumer, afterMs: number): Promise<void> {
  await sleep(afterMs, o.signal);
  if (o.signal.aborted) return;
  o.retired.add(c.path);
  await sleep(1000);
  const name = c.path.split(":").at(-1) ?? "";
  await o.log.send(
    o.conn,
    {
      worker: "workspaces",
      kind: "delete-workspace",
      cluster: c.cluster,
      workspace: c.path,
      resource: "workspaces",
      namespace: "",
      name,
    },
    "DELETE",
    `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`,
  );
}
