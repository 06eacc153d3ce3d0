// The plugin's help texts: the overview and one page per command, printed for --help and after a usage error.
import type { Topic } from "./args.ts";

const CONNECTION_HELP = `Connection (as kubectl):
  --kubeconfig <file>    kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)
  --context <name>       kubeconfig context to use
  --workspace <path>     kcp workspace to act in, e.g. root:consumer1 (default: the one in the kubeconfig's server URL)`;

export const HELP: Record<Topic | "teardown" | "main", string> = {
  main: `kubectl dependencies: what DependencyRules protect, and why a delete is refused.

Commands:
  why <resource>/<name> [-n <namespace>]   would deleting this object be refused now, and by what
  graph [-o mermaid|dot|json] [--objects]  the graph of the rules (or of one workspace's objects)
  check                                    dangling references in a workspace, and rules that are not Ready
  teardown -n <ns> | --workspace <path>    delete everything there in dependency order (--plan: only show it)
  verify [-o text|json]                    does protection refuse exactly what the rules say, in a workspace

Run "kubectl dependencies <command> --help" for a command's flags.

${CONNECTION_HELP}`,
  why: `kubectl dependencies why <resource>/<name> [-n <namespace>]

Asks kcp, without deleting anything (a server-side dry-run DELETE), whether deleting the object would be refused
right now, by which webhook, and lists every object that blocks it (also past the ten the refusal message names),
with what to do next.

Exit code: 0 the object can be deleted now; 1 a delete would be refused; 2 the question could not be answered
(no such object or type, no permission, kcp not reachable, bad arguments).

Flags:
  -n, --namespace <ns>       namespace of the object (default: the context's namespace, else "default")
  --rule-workspace <path>    also name the DependencyRule behind each blocker, read from this provider workspace
                             (repeatable; only if you may read its rules: consumers usually may not)

${CONNECTION_HELP}

Example:
  kubectl dependencies why vpc/my-vpc -n default`,
  graph: `kubectl dependencies graph [-o mermaid|dot|json] [--rule-workspace <path>]... [--objects]

Without --objects: the type-level graph of every DependencyRule you may read, an edge from each dependent type to
each type it depends on, labelled with the field path. With --objects: the objects of one workspace (--workspace,
default the kubeconfig's) as a graph of who references whom, by those rules. Edges on a cycle are marked.

Flags:
  -o, --output <format>      mermaid (default), dot (Graphviz) or json
  --rule-workspace <path>    read rules from this workspace (repeatable); default: every workspace below root you
                             may list, recursively, reading rules where you may
  --objects                  the object graph of --workspace instead of the type graph

${CONNECTION_HELP}

Examples:
  kubectl dependencies graph -o dot | dot -Tpng > rules.png
  kubectl dependencies graph --objects --workspace root:consumer1`,
  check: `kubectl dependencies check [--rule-workspace <path>]...

Lists, as tables, the dependents in one workspace (--workspace, default the kubeconfig's) that name a dependency
that does not exist (dangling references), and the DependencyRules whose Ready condition is not True. Needs read
access to the rules (see --rule-workspace) and to the objects of the workspace.

Exit code: 0 nothing found; 1 something found; 2 the check could not be made.

Flags:
  --rule-workspace <path>    read rules from this workspace (repeatable); default: every readable workspace below root

${CONNECTION_HELP}`,
  verify: `kubectl dependencies verify [-o text|json] [--rule-workspace <path>]...

For operators, as a periodic job: in one workspace (--workspace, default the kubeconfig's), dry-run DELETEs every
object of every type the DependencyRules depend on (a server-side dry run: nothing is deleted) and compares kcp's
answer with the rules. An object the rules say is referenced must be refused, naming exactly its dependents; every
refusal must be explained by a rule. Lists the mismatches: protection that silently does nothing (unprotected), a
blocker no rule explains (stale-blockers), an expected blocker not named (missing-blockers). What a first pass finds
is checked again two seconds later; only what persists is reported. Needs read access to the rules and to the
workspace's objects, and the right to delete them (dry runs are authorized as deletes).

Exit code: 0 everything matches; 1 a mismatch; 2 the check could not be made, or an object could not be verified
(for example the webhook answered 503).

Flags:
  -o, --output <format>      text (default) or json
  --rule-workspace <path>    read rules from this workspace (repeatable); default: every readable workspace below root

${CONNECTION_HELP}

Example:
  kubectl dependencies verify --workspace root:consumer1 -o json`,
  teardown: `kubectl dependencies teardown (-n <namespace> | --workspace <path>) [--plan [-o table|json]]

Deletes every object of the workspace's bound types (APIBindings) in one namespace (-n), or in the whole workspace
(--workspace without -n: every namespace and the cluster-scoped objects), in dependency order: dependents first.
The order comes from kcp itself: a server-side dry-run DELETE of each object, and the blockers the webhook names
in its refusal (status.details.causes), so no access to the rules is needed. Each wave is deleted, then waited for
until its objects are gone (finalizers included); then the rest is planned again. Only objects a dry run just
allowed are deleted; protection is never skipped unless you name the object with --skip-protection.

With --plan nothing is deleted: the waves, what blocks what, cycles, objects held by finalizers.

Exit code: 0 done (or, with --plan, every object has a wave); 1 it cannot finish (a cycle, a blocker outside the
teardown, a delete refused for another reason, a finalizer that does not clear before --timeout); 2 no answer.

Flags:
  -n, --namespace <ns>                the namespace to empty
  --plan                              print the plan, delete nothing
  -o, --output <format>               with --plan: table (default) or json (schema: docs/operations.md)
  --timeout <duration>                give up after this long (default 10m)
  --concurrency <n>                   dry runs, deletes and reads at a time (default 8)
  --skip-protection <resource>/<name> allow skip-protection for this object: the plugin sets the annotation
                                      before deleting it (repeatable; to break a cycle); in a whole-workspace
                                      teardown a namespaced object is <resource>/<namespace>/<name>

${CONNECTION_HELP}

Examples:
  kubectl dependencies teardown -n default --plan
  kubectl dependencies teardown -n default --timeout 5m
  kubectl dependencies teardown --workspace root:consumer1 --plan -o json`,
};
