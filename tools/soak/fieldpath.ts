// The checker's own reading of a rule's field path (`.spec.vpcRef.name`, `.spec.nics[*].subnetRef.name`): names found
// at the path. Written apart from src/fieldpath on purpose, so a bug there cannot hide itself here.
export function namesAt(obj: unknown, path: string): string[] {
  const segments = path.replace(/^\./, "").split(".");
  let current: unknown[] = [obj];
  for (const seg of segments) {
    const m = /^([^[\]]+)(\[\*\])?$/.exec(seg);
    if (!m) return [];
    const [, field, star] = m;
    const next: unknown[] = [];
    for (const c of current) {
      if (c === null || typeof c !== "object" || Array.isArray(c)) continue;
      const v = (c as Record<string, unknown>)[field ?? ""];
      if (star) {
        if (Array.isArray(v)) next.push(...(v as unknown[]));
      } else if (v !== undefined) next.push(v);
    }
    current = next;
  }
  return current.filter((v): v is string => typeof v === "string" && v !== "");
}
