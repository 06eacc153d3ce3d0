// A stand-in for the index's watch of one dependent type: the test says which endpoints (shards) exist, what each
// holds, whether it has listed and whether it fails, and calls the watch's onChange as the informer would.
import type { FieldPath } from "../../src/fieldpath/fieldpath.ts";
import type { LogicalClusterName } from "../../src/api/types.ts";
import type { IndexedType, RuleRegistry } from "../../src/webhook/rules/registry.ts";
import { ReferenceStore } from "../../src/webhook/deletion/index/store.ts";
import { objectKey, type KubeObject } from "../../src/kcp/informer.ts";
import type { EndpointState, IndexWatch, IndexWatchFactory } from "../../src/webhook/deletion/index/watches.ts";
import { fp, VM_DEPENDENT } from "./helpers-rules.ts";

/** A VM of `cluster` naming `vpc` at .spec.vpcRef.name, as kcp serves it. */
export function vmObject(cluster: string, name: string, vpc: string, namespace = "default"): unknown {
  return {
    apiVersion: "compute.example.io/v1",
    kind: "VirtualMachine",
    metadata: { name, namespace, annotations: { "kcp.io/cluster": cluster } },
    spec: { vpcRef: { name: vpc }, nics: [{ vpcRef: { name: vpc } }] },
  };
}

export class FakeWatch implements IndexWatch {
  started = false;
  stopped = false;
  /** False while the endpoint list (the APIExportEndpointSlice) is not known. */
  known = true;
  /** A failure of the endpoint list's own list/watch. */
  slicesError: string | undefined;
  readonly states: EndpointState[] = [];
  /** What a consistent read through an endpoint finds: `<endpoint> <cluster> <path>` → object. */
  readonly objects = new Map<string, unknown>();
  readonly reads: string[] = [];
  readonly paths: readonly FieldPath[];
  readonly onChange: () => void;

  constructor(paths: readonly FieldPath[], onChange: () => void) {
    this.paths = paths;
    this.onChange = onChange;
  }

  /** Adds a shard holding `objects` (indexed as the informer's store would, and what a read there finds). */
  endpoint(url: string, objects: unknown[], o: { synced?: boolean; error?: string } = {}): EndpointState {
    const store = new ReferenceStore(this.paths);
    objects.forEach((obj) => {
      store.set(objectKey(obj as KubeObject), obj);
      this.objects.set(readKey(url, obj), obj);
    });
    const state: EndpointState = { endpoint: url, store, synced: o.synced ?? true };
    if (o.error !== undefined) state.error = o.error;
    this.states.push(state);
    return state;
  }

  start(): void {
    this.started = true;
  }
  stop(): void {
    this.stopped = true;
  }
  hasSynced(): boolean {
    return this.known && this.slicesError === undefined && this.states.every((s) => s.synced);
  }
  endpointsKnown(): boolean {
    return this.known && this.slicesError === undefined;
  }
  failing(): { endpoint: string; error: string }[] {
    const out = this.slicesError === undefined ? [] : [{ endpoint: "slices", error: this.slicesError }];
    for (const s of this.states) if (s.error !== undefined) out.push({ endpoint: s.endpoint, error: s.error });
    return out;
  }
  endpointStates(): EndpointState[] {
    return this.states;
  }
  read(endpoint: string, cluster: string, path: string): Promise<unknown> {
    const key = `${endpoint} ${cluster} ${path}`;
    this.reads.push(key);
    return Promise.resolve(this.objects.get(key));
  }
}

/** Where the second look reads a VM of vmObject: `<endpoint> <cluster> <path>`. */
export function readKey(endpoint: string, obj: unknown): string {
  const meta = (obj as { metadata: { name: string; namespace: string; annotations: Record<string, string> } }).metadata;
  const path = `/apis/compute.example.io/v1/namespaces/${meta.namespace}/virtualmachines/${meta.name}`;
  return `${endpoint} ${meta.annotations["kcp.io/cluster"]} ${path}`;
}

/** A factory that records every watch it builds, by dependent type key. */
export function fakeWatches(): { factory: IndexWatchFactory; built: { key: string; watch: FakeWatch }[] } {
  const built: { key: string; watch: FakeWatch }[] = [];
  const factory: IndexWatchFactory = ({ key, type, onChange }) => {
    const watch = new FakeWatch(type.fieldPaths, onChange);
    built.push({ key, watch });
    return watch;
  };
  return { factory, built };
}

/** A registry whose only part the index reads: the dependent types and their field paths. */
export function registryOf(...types: IndexedType[]): RuleRegistry {
  return { dependentTypes: () => types } as unknown as RuleRegistry;
}

/** The VM type with the given field paths. */
export const vmType = (...paths: string[]): IndexedType => ({ dependent: VM_DEPENDENT, fieldPaths: paths.map(fp) });

export const CONSUMER = "consumer1" as LogicalClusterName;
