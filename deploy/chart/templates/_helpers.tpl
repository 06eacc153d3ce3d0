{{/* Names. */}}
{{- define "kdc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kdc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kdc.controller.name" -}}{{ include "kdc.fullname" . }}-controller{{- end -}}
{{- define "kdc.webhook.name" -}}{{ include "kdc.fullname" . }}-webhook{{- end -}}

{{/* Labels: every object gets kdc.labels; pods and selectors the selector labels plus their component. */}}
{{- define "kdc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kdc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kdc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kdc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kcp-dependency-controller
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Component labels: include with (dict "ctx" $ "component" "controller"). */}}
{{- define "kdc.componentSelectorLabels" -}}
{{ include "kdc.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kdc.componentLabels" -}}
{{ include "kdc.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
The image of one binary; include with (dict "ctx" $ "component" "controller"). `<component>.image` is the Go original's
per-binary shape (e.g. each relocated into an air-gapped registry): each of its keys that is set wins over the shared
`image`'s. A pin of the component (digest, else tag) wins over the shared pin (digest, else tag, else appVersion): a
digest survives relocation, so a relocated repository keeps the shared digest.
*/}}
{{- define "kdc.image" -}}
{{- $shared := .ctx.Values.image -}}
{{- /* dig: a release upgraded with --reuse-values keeps values from before these keys existed. */ -}}
{{- $own := index .ctx.Values .component -}}
{{- $repository := dig "image" "repository" "" $own | default $shared.repository -}}
{{- if dig "image" "digest" "" $own -}}
{{ $repository }}@{{ dig "image" "digest" "" $own }}
{{- else if dig "image" "tag" "" $own -}}
{{ $repository }}:{{ dig "image" "tag" "" $own }}
{{- else if $shared.digest -}}
{{ $repository }}@{{ $shared.digest }}
{{- else -}}
{{ $repository }}:{{ $shared.tag | default .ctx.Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- /* The WorkspaceType whose initializer the controller serves, `<path>:<name>`; empty when off. dig: a release
upgraded with --reuse-values keeps values from before the key existed. */ -}}
{{- define "kdc.providerWorkspaceType" -}}
{{ dig "providerInitializer" "workspaceType" "" .Values.controller }}
{{- end -}}

{{- /* The install notes' step for the provider initializer: the right deploy/rbac/provider-initializer.yaml grants,
for the type in the values (test/unit/chart.test.ts compares it with the file). */ -}}
{{- define "kdc.providerInitializerNotes" -}}
{{- with include "kdc.providerWorkspaceType" . }}
{{- $path := regexReplaceAll ":[^:]*$" . "" }}
{{- $name := regexFind "[^:]*$" . }}

The controller serves the initializer of WorkspaceType {{ . }}. In {{ $path }}, kcp must grant the
controller's user the ClusterRole of deploy/rbac/provider-initializer.yaml for that type:
  rules:
    - apiGroups: [tenancy.kcp.io]
      resources: [workspacetypes]
      resourceNames: [{{ $name }}]
      verbs: [get, initialize]
    - nonResourceURLs: ["/"]
      verbs: [access]
  envsubst '${CONTROLLER_USER}' <deploy/rbac/provider-initializer.yaml |
    {{- if ne $name "dependency-provider" }}
    sed 's/resourceNames: \[dependency-provider\]/resourceNames: [{{ $name }}]/' |
    {{- end }}
    kubectl --server="$KCP_URL/clusters/{{ $path }}" apply -f -
{{- end }}
{{- end -}}

{{- define "kdc.imagePullPolicy" -}}
{{ dig "image" "pullPolicy" "" (index .ctx.Values .component) | default .ctx.Values.image.pullPolicy }}
{{- end -}}

{{- define "kdc.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create -}}
{{ default (include "kdc.controller.name" .) .Values.controller.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.controller.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{- define "kdc.webhook.serviceAccountName" -}}
{{- if .Values.webhook.serviceAccount.create -}}
{{ default (include "kdc.webhook.name" .) .Values.webhook.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.webhook.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{- define "kdc.controller.kubeconfigSecret" -}}
{{ default (printf "%s-kubeconfig" (include "kdc.controller.name" .)) .Values.controller.kubeconfig.secretName }}
{{- end -}}

{{- define "kdc.webhook.kubeconfigSecret" -}}
{{ default (printf "%s-kubeconfig" (include "kdc.webhook.name" .)) .Values.webhook.kubeconfig.secretName }}
{{- end -}}

{{/*
"true" when cert-manager issues the serving certificate: webhook.tls.certManager.enabled when it is set; left unset
(null, the default), cert-manager issues it unless webhook.tls.existingSecret names a Secret. So a values file in the
Go original's shape, whose chart defaulted certManager.enabled to false, works with only existingSecret set.
*/}}
{{- define "kdc.webhook.certManager" -}}
{{- $tls := .Values.webhook.tls -}}
{{- if kindIs "invalid" $tls.certManager.enabled -}}
{{- if not $tls.existingSecret }}true{{ end -}}
{{- else if $tls.certManager.enabled -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret with the webhook's tls.crt, tls.key and ca.crt. */}}
{{- define "kdc.webhook.tlsSecret" -}}
{{ default (printf "%s-tls" (include "kdc.webhook.name" .)) .Values.webhook.tls.existingSecret }}
{{- end -}}

{{/* The in-cluster DNS name of the webhook Service. */}}
{{- define "kdc.webhook.serviceHost" -}}
{{ include "kdc.webhook.name" . }}.{{ .Release.Namespace }}.svc
{{- end -}}

{{/* The base URL the controller writes into webhook configurations (it appends /validate/<logical cluster>). */}}
{{- define "kdc.webhook.url" -}}
{{- if .Values.webhook.externalURL -}}
{{ .Values.webhook.externalURL | trimSuffix "/" }}
{{- else if eq (int .Values.webhook.service.port) 443 -}}
https://{{ include "kdc.webhook.serviceHost" . }}
{{- else -}}
https://{{ include "kdc.webhook.serviceHost" . }}:{{ .Values.webhook.service.port }}
{{- end -}}
{{- end -}}

{{/* The host of webhook.externalURL, without port or brackets ("" when unset). */}}
{{- define "kdc.webhook.externalHost" -}}
{{- if .Values.webhook.externalURL -}}
{{- $host := (urlParse .Values.webhook.externalURL).host -}}
{{- if hasPrefix "[" $host -}}
{{- regexReplaceAll "^\\[(.*)\\](:[0-9]+)?$" $host "${1}" -}}
{{- else -}}
{{- regexReplaceAll ":[0-9]+$" $host "" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Anti-affinity of the webhook replicas, from webhook.podAntiAffinity. */}}
{{- define "kdc.webhook.affinity" -}}
{{- if .Values.webhook.affinity -}}
{{ toYaml .Values.webhook.affinity }}
{{- else if eq .Values.webhook.podAntiAffinity "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "kdc.componentSelectorLabels" (dict "ctx" . "component" "webhook") | nindent 12 }}
{{- else if eq .Values.webhook.podAntiAffinity "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "kdc.componentSelectorLabels" (dict "ctx" . "component" "webhook") | nindent 10 }}
{{- end -}}
{{- end -}}

{{/* The container securityContext: fixed, not a value. */}}
{{- define "kdc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
privileged: false
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
Checks the values the schema cannot: fails rendering with a message that says what to change.
Included once, from the webhook Deployment.
*/}}
{{- define "kdc.validate" -}}
{{- $tls := .Values.webhook.tls -}}
{{- if and (not $tls.existingSecret) (not (include "kdc.webhook.certManager" .)) -}}
{{- fail "webhook.tls: the webhook needs a serving certificate. Either set webhook.tls.certManager.enabled=true (cert-manager issues it; without webhook.tls.certManager.issuerRef.name the chart creates a self-signed CA), or set webhook.tls.existingSecret to a kubernetes.io/tls Secret holding tls.crt, tls.key and ca.crt." -}}
{{- end -}}
{{- if and $tls.existingSecret (include "kdc.webhook.certManager" .) -}}
{{- fail (printf "webhook.tls: existingSecret (%q) and certManager.enabled are exclusive: set webhook.tls.certManager.enabled=false to use your Secret, or unset webhook.tls.existingSecret to let cert-manager issue the certificate." $tls.existingSecret) -}}
{{- end -}}
{{- if and (gt (int .Values.controller.replicas) 1) (not .Values.controller.leaderElection.enabled) -}}
{{- fail "controller.replicas > 1 needs controller.leaderElection.enabled=true: replicas without leader election would fight over webhook configurations." -}}
{{- end -}}
{{- if and (not (kindIs "invalid" .Values.webhook.service.nodePort)) (eq .Values.webhook.service.type "ClusterIP") -}}
{{- fail "webhook.service.nodePort is set, but webhook.service.type is ClusterIP: use type NodePort or LoadBalancer, or unset nodePort." -}}
{{- end -}}
{{- if and (eq .Values.webhook.service.type "LoadBalancer") (not .Values.webhook.service.loadBalancerSourceRanges) -}}
{{- fail "webhook.service.type=LoadBalancer needs webhook.service.loadBalancerSourceRanges: without them every address on the internet reaches the webhook. List the CIDRs kcp calls from (e.g. its egress or node addresses)." -}}
{{- end -}}
{{- if and (dig "priorityClass" "create" false .Values.webhook) .Values.webhook.priorityClassName -}}
{{- fail (printf "webhook.priorityClass.create and webhook.priorityClassName (%q) are exclusive: create the chart's PriorityClass, or name an existing one." .Values.webhook.priorityClassName) -}}
{{- end -}}
{{- if and (include "kdc.providerWorkspaceType" .) (not (dig "providerInitializer" "webhookUser" "" .Values.controller)) -}}
{{- fail "controller.providerInitializer.workspaceType needs controller.providerInitializer.webhookUser: the index consent the initializer writes into each provider workspace binds the webhook's user name in kcp (${WEBHOOK_USER} of deploy/rbac/)." -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled=true: the ServiceMonitor scrapes the metrics Services." -}}
{{- end -}}
{{- if and .Values.webhook.podDisruptionBudget.enabled (lt (int .Values.webhook.replicas) (add 1 (int .Values.webhook.podDisruptionBudget.minAvailable) | int)) -}}
{{- fail (printf "webhook.podDisruptionBudget.minAvailable=%d with webhook.replicas=%d would block every node drain: keep minAvailable below replicas." (int .Values.webhook.podDisruptionBudget.minAvailable) (int .Values.webhook.replicas)) -}}
{{- end -}}
{{- /* Last, so the more specific checks above speak first. */ -}}
{{- $np := .Values.webhook.networkPolicy -}}
{{- if and $np.enabled (not $np.kcpCIDRs) (not $np.kcpPeers) -}}
{{- fail "webhook.networkPolicy: the webhook port is closed to everyone but kcp, so the chart needs to know where kcp calls from. List webhook.networkPolicy.kcpCIDRs (kcp's egress, node or load-balancer addresses) or webhook.networkPolicy.kcpPeers (a kcp in this cluster); with neither, the policy would drop kcp's calls and every protected DELETE would be refused. To leave the port open to whatever reaches the pods instead, opt out explicitly with webhook.networkPolicy.enabled=false." -}}
{{- end -}}
{{- end -}}
