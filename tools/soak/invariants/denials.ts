// I2, honest denials: each blocker a denial names existed and referenced the target around the decision.
import { namesAt } from "../fieldpath.ts";
import { keyOf, type OpRecord } from "../history.ts";
import type { Judging } from "./findings.ts";
import { iso, versionsOver } from "./timeline.ts";

export function checkDenials(j: Judging): void {
  const kindToResource = new Map(j.tl.edgesEver(0, Number.MAX_SAFE_INTEGER).map((e) => [e.dependentKind, e.dependent]));
  for (const op of j.h.ops) {
    if (op.status !== 409 || !/still referenced by/.test(op.message)) continue;
    j.out.checkedDenials++;
    const m = /cannot delete ([^/\s]+)\/(\S+): still referenced by (.*)$/.exec(op.message);
    if (!m) {
      j.out.violations.push({ invariant: "I2", message: `unparsable denial #${op.id}: ${op.message}`, at: op.sentAt });
      continue;
    }
    const [, , targetName = "", list = ""] = m;
    for (const blocker of list.replace(/ and (at least )?\d+ more$/, "").split(", ")) {
      checkBlocker(j, op, targetName, blocker, kindToResource);
    }
  }
}

function checkBlocker(
  j: Judging,
  op: OpRecord,
  targetName: string,
  blocker: string,
  kindToResource: Map<string, string>,
): void {
  const from = op.sentAt - j.h.windowMs;
  const to = op.answeredAt + j.h.windowMs;
  const edges = j.tl.edgesEver(from, to).filter((e) => e.dependency === op.resource);
  const parts = blocker.split("/");
  const kind = parts[0] ?? "";
  const name = parts.at(-1) ?? "";
  const ns = parts.length === 3 ? (parts[1] ?? "") : op.namespace;
  const resource = kindToResource.get(kind);
  const dv = resource ? (j.tl.objects.get(keyOf({ cluster: op.cluster, resource, namespace: ns, name })) ?? []) : [];
  const ok = versionsOver(dv, from, to).some(
    (v) =>
      v.type !== "DELETED" &&
      edges.some((e) => e.dependent === resource && namesAt(v.object, e.path).includes(targetName)),
  );
  if (!ok) {
    j.out.violations.push({
      invariant: "I2",
      message:
        `denial #${op.id} (${op.kind} ${op.resource} ${j.ws(op.cluster)}/${op.namespace}/${targetName}, sent ` +
        `${iso(op.sentAt)}) names ${blocker}, which did not exist or reference it then`,
      at: op.sentAt,
    });
  }
}
