{{/*
Names. `fullname` prefixes every object: `<release>-<chart>`, or the release name alone when it already
contains the chart's name (release `tfjob-extender` → `tfjob-extender`), cut to 63 characters.
*/}}
{{- define "tfjob-extender.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tfjob-extender.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The three identities (README.md, "Who may do what"). */}}
{{- define "tfjob-extender.schedulerAccount" -}}
{{- printf "%s-scheduler" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{- define "tfjob-extender.extenderAccount" -}}
{{- include "tfjob-extender.fullname" . }}
{{- end }}

{{- define "tfjob-extender.loopsAccount" -}}
{{- printf "%s-loops" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{/* The Lease the loops elect their one active instance by: `settings.leader_election.lease_name`, else one
named after the release (`<fullname>-loops`), so two releases never share one. */}}
{{- define "tfjob-extender.loopsLease" -}}
{{- (.Values.settings | default dict).leader_election | default dict | dig "lease_name" (include "tfjob-extender.loopsAccount" .) }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "tfjob-extender.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tfjob-extender.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tfjob-extender
{{- end }}

{{- define "tfjob-extender.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfjob-extender.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component (`scheduler` or `loops`): call with (dict "root" $ "component" "…"). */}}
{{- define "tfjob-extender.componentLabels" -}}
{{ include "tfjob-extender.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "tfjob-extender.componentSelectorLabels" -}}
{{ include "tfjob-extender.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
An image reference from {registry, repository, tag, digest}: call with (dict "image" … "tag" default-tag).
*/}}
{{- define "tfjob-extender.imageRef" -}}
{{- $ref := .image.repository }}
{{- if .image.registry }}
{{- $ref = printf "%s/%s" .image.registry $ref }}
{{- end }}
{{- $ref = printf "%s:%s" $ref (.image.tag | default .tag | toString) }}
{{- if .image.digest }}
{{- $ref = printf "%s@%s" $ref .image.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{- define "tfjob-extender.image" -}}
{{- include "tfjob-extender.imageRef" (dict "image" .Values.image "tag" .Chart.AppVersion) }}
{{- end }}

{{/*
kube-scheduler's image tag when kubeScheduler.image.tag is empty, from the cluster's version, since
registry.k8s.io publishes one image per Kubernetes release and kube-scheduler must not be newer than the API
server: a MAJOR.MINOR.PATCH version gives that release, any build suffix stripped (v1.31.1+k3s1 → v1.31.1,
v1.36.4-gke.100 → v1.36.4); a MAJOR.MINOR alone (as Argo CD passes it: 1.35) the tested patch of that minor
(kubeScheduler.testedReleases). Refused, naming kubeScheduler.image.tag, when the minor is not one of those,
or when the version is unknown: `helm template` without --kube-version renders for Helm's built-in vX.Y.0,
which would be newer than an older API server, so a vX.Y.0 without a cluster to confirm it (no ConfigMap
kube-root-ca.crt can be looked up in the release namespace) is not taken as the cluster's.
*/}}
{{- define "tfjob-extender.kubeSchedulerTag" -}}
{{- $version := .Capabilities.KubeVersion.Version }}
{{- $release := regexFind "^v?[0-9]+\\.[0-9]+\\.[0-9]+" $version }}
{{- $minor := regexFind "^v?[0-9]+\\.[0-9]+" $version | trimPrefix "v" }}
{{- $fix := "pass the cluster's version (--kube-version 1.35, v1.35.4) or set kubeScheduler.image.tag" }}
{{- if and $release (eq $version (printf "v%s.0" $minor)) (not (lookup "v1" "ConfigMap" .Release.Namespace "kube-root-ca.crt")) }}
{{- fail (printf "the cluster's version is unknown (%s is Helm's own default when no cluster answers): %s" $version $fix) }}
{{- end }}
{{- if $release }}
{{- printf "v%s" (trimPrefix "v" $release) }}
{{- else if not $minor }}
{{- fail (printf "the cluster's version %q has no MAJOR.MINOR: %s" $version $fix) }}
{{- else }}
{{- $tested := get (.Values.kubeScheduler.testedReleases | default dict) $minor | toString }}
{{- if not $tested }}
{{- fail (printf "the cluster's version %s names no patch and %s is not in kubeScheduler.testedReleases: set kubeScheduler.image.tag" $version $minor) }}
{{- end }}
{{- $tested }}
{{- end }}
{{- end }}

{{/*
The version kube-scheduler runs: its image's tag, or the cluster's version when the tag is empty.
*/}}
{{- define "tfjob-extender.kubeSchedulerVersion" -}}
{{- $tag := .Values.kubeScheduler.image.tag | toString }}
{{- if not $tag }}
{{- $tag = include "tfjob-extender.kubeSchedulerTag" . }}
{{- end }}
{{- $tag }}
{{- end }}

{{/*
Whether kube-scheduler's release is 1.37 or later ("tfjob-extender.kubeSchedulerVersion"): the release with
the podGroupPostFilter extension point (an older kube-scheduler refuses the field: its configuration is
decoded strictly) and the first whose GenericWorkload gate serves scheduling.k8s.io/v1beta1 gangs. A tag with
no MAJOR.MINOR.PATCH counts as a current release.
*/}}
{{- define "tfjob-extender.kubeSchedulerIs137" -}}
{{- $release := regexFind "[0-9]+\\.[0-9]+\\.[0-9]+" (include "tfjob-extender.kubeSchedulerVersion" .) }}
{{- if or (not $release) (semverCompare ">=1.37.0-0" $release) }}true{{ end }}
{{- end }}

{{- define "tfjob-extender.kubeSchedulerHasPodGroupPostFilter" -}}
{{- include "tfjob-extender.kubeSchedulerIs137" . }}
{{- end }}

{{- define "tfjob-extender.kubeSchedulerImage" -}}
{{- include "tfjob-extender.imageRef" (dict "image" .Values.kubeScheduler.image "tag" (include "tfjob-extender.kubeSchedulerVersion" .)) }}
{{- end }}

{{/*
The config file's content: `settings` (the sections and root settings beyond the policy), with `policy` at
its top level and `scheduler_name` from `schedulerName`, so the extender passes every other scheduler's
pods through. Settings the chart sets by values or flags of its own are
refused here: `log_format` (`logFormat`), `native_gangs` (`nativeGangs`) and `leader_election.lease_namespace`
(the release namespace).
*/}}
{{- define "tfjob-extender.policy" -}}
{{- $policy := deepCopy (.Values.policy | default dict) }}
{{- $settings := deepCopy (.Values.settings | default dict) }}
{{- if and (hasKey $policy "scheduler_name") (ne (toString (get $policy "scheduler_name")) .Values.schedulerName) }}
{{- fail (printf "policy.scheduler_name (%v) differs from schedulerName (%s): set schedulerName only" (get $policy "scheduler_name") .Values.schedulerName) }}
{{- end }}
{{- if hasKey $settings "log_format" }}
{{- fail "settings.log_format: set logFormat instead (the chart passes it as --log-format)" }}
{{- end }}
{{- if hasKey (get $settings "leader_election" | default dict) "lease_namespace" }}
{{- fail "settings.leader_election.lease_namespace: the loops' Lease is in the release namespace (--lease-namespace)" }}
{{- end }}
{{- if hasKey $settings "native_gangs" }}
{{- fail "settings.native_gangs: set nativeGangs instead (it also renders the webhook)" }}
{{- end }}
{{- if hasKey $policy "managed_namespaces" }}
{{- fail "policy.managed_namespaces: set managedNamespaces instead (it also scopes the write rights)" }}
{{- end }}
{{- $_ := set $policy "scheduler_name" .Values.schedulerName }}
{{- if .Values.managedNamespaces }}
{{- $_ := set $policy "managed_namespaces" .Values.managedNamespaces }}
{{- end }}
{{- toYaml (merge $settings $policy) }}
{{- end }}

{{/* Where both processes read the policy file. */}}
{{- define "tfjob-extender.policyDir" -}}
/etc/tfjob-extender
{{- end }}

{{/*
Where a token file Secret is mounted (observe.debug.auth: tokenFile): beside the policy's directory, not in it,
since a mount point cannot be made inside a read-only ConfigMap volume.
*/}}
{{- define "tfjob-extender.tokenFileDir" -}}
/etc/tfjob-extender-auth
{{- end }}

{{/* Whether the observe listeners check tokens with the API server's TokenReview. */}}
{{- define "tfjob-extender.tokenReview" -}}
{{- if and .Values.observe.debug.enabled (eq .Values.observe.debug.auth "tokenReview") }}true{{- end }}
{{- end }}

{{/* Whether the observe listeners read accepted tokens from a mounted Secret. */}}
{{- define "tfjob-extender.tokenFile" -}}
{{- if and .Values.observe.debug.enabled (eq .Values.observe.debug.auth "tokenFile") }}true{{- end }}
{{- end }}

{{/*
The flags both processes take for their observe listener's /debug: none while debug is off; else
`--observe-debug` and how callers authenticate; with tokenReview, who may pass: the users and groups named,
and with accessReview whoever may get services/proxy of the process's own Service (a SubjectAccessReview),
never any authenticated identity. Call with (dict "root" $ "service" "<its Service's name>"). Fails on an
unknown `auth`, a token file without a Secret, or a tokenReview that lets no one pass.
*/}}
{{- define "tfjob-extender.observeDebugArgs" -}}
{{- $debug := .root.Values.observe.debug }}
{{- if $debug.enabled }}
{{- if not (has $debug.auth (list "tokenReview" "tokenFile")) }}
{{- fail (printf "observe.debug.auth is %q: tokenReview or tokenFile" (toString $debug.auth)) }}
{{- end }}
- --observe-debug
{{- if eq $debug.auth "tokenReview" }}
{{- if not (or $debug.allowedUsers $debug.allowedGroups $debug.accessReview) }}
{{- fail "observe.debug: tokenReview lets no one read /debug by itself: set allowedUsers, allowedGroups or accessReview" }}
{{- end }}
- --observe-auth-token-review
{{- range $debug.allowedUsers }}
- --observe-auth-allowed-user
- {{ . | quote }}
{{- end }}
{{- range $debug.allowedGroups }}
- --observe-auth-allowed-group
- {{ . | quote }}
{{- end }}
{{- if $debug.accessReview }}
- --observe-auth-access-review
- {{ printf "%s/%s" .root.Release.Namespace .service }}
{{- end }}
{{- else }}
{{- if not $debug.tokenFile.secretName }}
{{- fail "observe.debug.auth is tokenFile: set observe.debug.tokenFile.secretName to the Secret holding the tokens" }}
{{- end }}
{{- if or $debug.allowedUsers $debug.allowedGroups }}
{{- fail "observe.debug.allowedUsers and allowedGroups apply to tokenReview only: a token file names no users" }}
{{- end }}
- --observe-auth-token-file
- {{ printf "%s/%s" (include "tfjob-extender.tokenFileDir" .root) $debug.tokenFile.key | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The policy volume's mount, in the extender and the loops containers. */}}
{{- define "tfjob-extender.policyMount" -}}
- name: policy
  mountPath: {{ include "tfjob-extender.policyDir" . }}
  readOnly: true
{{- if include "tfjob-extender.tokenFile" . }}
- name: observe-auth
  mountPath: {{ include "tfjob-extender.tokenFileDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The volumes behind "tfjob-extender.policyMount". */}}
{{- define "tfjob-extender.policyVolumes" -}}
- name: policy
  configMap:
    name: {{ include "tfjob-extender.fullname" . }}-policy
{{- if include "tfjob-extender.tokenFile" . }}
- name: observe-auth
  secret:
    secretName: {{ .Values.observe.debug.tokenFile.secretName }}
    items:
      - key: {{ .Values.observe.debug.tokenFile.key }}
        path: {{ .Values.observe.debug.tokenFile.key }}
{{- end }}
{{- end }}

{{/*
Pod settings both Deployments share: call with (dict "root" $ "values" .Values.extender|.Values.loops).
*/}}
{{- define "tfjob-extender.podPlacement" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The pod annotations of a Deployment: call with (dict "root" $ "values" … "port" N "checksum" sha); port
0: no plain-HTTP /metrics for Prometheus's annotations. */}}
{{- define "tfjob-extender.podAnnotations" -}}
checksum/config: {{ .checksum }}
{{- if and .root.Values.observe.prometheusAnnotations .port }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
What `kubeScheduler.extraArgs` say of the GenericWorkload gate: "true" or "false" as the last `--feature-gates`
among them that names it sets it (`--feature-gates=A=true,B=false`, or `--feature-gates` and its value as the
next item; a value kube-scheduler reads as true: true, 1, t), empty when none names it.
*/}}
{{- define "tfjob-extender.userGenericWorkloadGate" -}}
{{- $args := .Values.kubeScheduler.extraArgs | default list }}
{{- $said := "" }}
{{- range $i, $arg := $args }}
{{- $gates := "" }}
{{- if hasPrefix "--feature-gates=" (toString $arg) }}
{{- $gates = trimPrefix "--feature-gates=" (toString $arg) }}
{{- else if and (eq (toString $arg) "--feature-gates") (lt (add1 $i) (len $args)) }}
{{- $gates = index $args (add1 $i) | toString }}
{{- end }}
{{- range splitList "," $gates }}
{{- $pair := splitList "=" . }}
{{- if and (eq (len $pair) 2) (eq (trim (first $pair)) "GenericWorkload") }}
{{- $said = ternary "true" "false" (has (lower (trim (last $pair))) (list "true" "1" "t")) }}
{{- end }}
{{- end }}
{{- end }}
{{- $said }}
{{- end }}

{{/*
Native gangs resolved: `on` or `off`. `off` is off. `auto` is on exactly when the cluster serves
scheduling.k8s.io/v1beta1 PodGroups (`.Capabilities.APIVersions`: the API server's discovery at install and
upgrade; `helm template` sees only its `--api-versions`), kube-scheduler is 1.37 or later, and
`kubeScheduler.extraArgs` do not turn GenericWorkload off. `on` is on without asking the cluster (the
extender asks at run time, and keeps its own barrier with a warning where the API is not served), but the
render fails where kube-scheduler is older than 1.37 or its extraArgs turn the gate off: native gangs and
kube-scheduler's gate always go together.
*/}}
{{- define "tfjob-extender.nativeGangsMode" -}}
{{- $setting := toString .Values.nativeGangs }}
{{- $version := include "tfjob-extender.kubeSchedulerVersion" . }}
{{- $gate := include "tfjob-extender.userGenericWorkloadGate" . }}
{{- if eq $setting "off" }}off
{{- else if eq $setting "on" }}
{{- if not (include "tfjob-extender.kubeSchedulerIs137" .) }}
{{- fail (printf "nativeGangs is on, but kube-scheduler is %s (kubeScheduler.image.tag, else the cluster's version): native gangs need 1.37 or later; set nativeGangs to auto or off, or give kube-scheduler's version (kubeScheduler.image.tag, or helm template --kube-version)" $version) }}
{{- end }}
{{- if eq $gate "false" }}
{{- fail "nativeGangs is on, but kubeScheduler.extraArgs turn kube-scheduler's GenericWorkload gate off: without it nothing holds a native gang's barrier; drop GenericWorkload=false or set nativeGangs to off" }}
{{- end }}
{{- print "on" }}
{{- else if eq $setting "auto" }}
{{- if and (.Capabilities.APIVersions.Has "scheduling.k8s.io/v1beta1/PodGroup") (include "tfjob-extender.kubeSchedulerIs137" .) (ne $gate "false") }}on{{ else }}off{{ end }}
{{- else }}
{{- fail (printf "nativeGangs is %q: auto, on or off" $setting) }}
{{- end }}
{{- end }}

{{/* Why native gangs resolved as they did, for the rendered objects' comments and NOTES.txt. */}}
{{- define "tfjob-extender.nativeGangsWhy" -}}
{{- $setting := toString .Values.nativeGangs }}
{{- $version := include "tfjob-extender.kubeSchedulerVersion" . }}
{{- if has $setting (list "off" "on") }}nativeGangs: {{ $setting }}
{{- else if not (.Capabilities.APIVersions.Has "scheduling.k8s.io/v1beta1/PodGroup") }}nativeGangs: auto, and the cluster does not serve scheduling.k8s.io/v1beta1 PodGroups
{{- else if not (include "tfjob-extender.kubeSchedulerIs137" .) }}nativeGangs: auto, and kube-scheduler {{ $version }} is older than 1.37
{{- else if eq (include "tfjob-extender.userGenericWorkloadGate" .) "false" }}nativeGangs: auto, and kubeScheduler.extraArgs turn GenericWorkload off
{{- else }}nativeGangs: auto, the cluster serves scheduling.k8s.io/v1beta1 PodGroups, kube-scheduler {{ $version }}
{{- end }}
{{- end }}

{{/* Whether native gangs are on ("tfjob-extender.nativeGangsMode"): the webhook, its Service and rights render,
and kube-scheduler runs with the GenericWorkload gate. */}}
{{- define "tfjob-extender.nativeGangs" -}}
{{- if eq (include "tfjob-extender.nativeGangsMode" .) "on" }}true{{- end }}
{{- end }}

{{/*
kube-scheduler's arguments after `--config`: `kubeScheduler.extraArgs`, with the GenericWorkload gate while
native gangs are on, given once: nothing added when the extraArgs already turn it on; else merged into the
first `--feature-gates` among them (`--feature-gates=A=true` → `--feature-gates=A=true,GenericWorkload=true`),
or `--feature-gates=GenericWorkload=true` first when they have none. A YAML list, empty when there is none.
*/}}
{{- define "tfjob-extender.kubeSchedulerArgs" -}}
{{- $args := .Values.kubeScheduler.extraArgs | default list }}
{{- if and (include "tfjob-extender.nativeGangs" .) (ne (include "tfjob-extender.userGenericWorkloadGate" .) "true") }}
{{- $merged := list }}
{{- $done := false }}
{{- $valueNext := false }}
{{- range $arg := $args }}
{{- $text := toString $arg }}
{{- if $done }}
{{- $merged = append $merged $arg }}
{{- else if $valueNext }}
{{- $gates := trimSuffix "," $text }}
{{- $merged = append $merged (ternary "GenericWorkload=true" (printf "%s,GenericWorkload=true" $gates) (eq $gates "")) }}
{{- $done = true }}
{{- else if eq $text "--feature-gates" }}
{{- $merged = append $merged $arg }}
{{- $valueNext = true }}
{{- else if hasPrefix "--feature-gates=" $text }}
{{- $gates := trimSuffix "," (trimPrefix "--feature-gates=" $text) }}
{{- $merged = append $merged (printf "--feature-gates=%s" (ternary "GenericWorkload=true" (printf "%s,GenericWorkload=true" $gates) (eq $gates ""))) }}
{{- $done = true }}
{{- else }}
{{- $merged = append $merged $arg }}
{{- end }}
{{- end }}
{{- if and $valueNext (not $done) }}
{{- $merged = append $merged "GenericWorkload=true" }}
{{- $done = true }}
{{- end }}
{{- if not $done }}
{{- $merged = prepend $merged "--feature-gates=GenericWorkload=true" }}
{{- end }}
{{- $args = $merged }}
{{- end }}
{{- if $args }}
{{- toYaml $args }}
{{- end }}
{{- end }}

{{/* The verbs' Service, which kube-scheduler calls over mutual TLS, and the Secret the loops keep its
certificates in (k8s/verbs_tls.py), mounted by both pods at verbsTlsDir. */}}
{{- define "tfjob-extender.verbsService" -}}
{{- printf "%s-verbs" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{- define "tfjob-extender.verbsSecret" -}}
{{- printf "%s-verbs-tls" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{- define "tfjob-extender.verbsTlsDir" -}}
/etc/tfjob-extender/verbs-tls
{{- end }}

{{/*
Every pod's API credentials, for its ServiceAccount: what the kubelet would mount automatically, but a token
that expires within the hour (the automatic one may be extended to a year) and is renewed, the cluster CA,
the namespace; at the path in-cluster clients read. Every pod sets automountServiceAccountToken: false.
*/}}
{{- define "tfjob-extender.credentialsVolume" -}}
- name: credentials
  projected:
    sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
      - configMap:
          name: kube-root-ca.crt
          items: [{key: ca.crt, path: ca.crt}]
      - downwardAPI:
          items:
            - path: namespace
              fieldRef: {fieldPath: metadata.namespace}
{{- end }}

{{- define "tfjob-extender.credentialsMount" -}}
- {name: credentials, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
{{- end }}

{{/* The webhook's Service, the MutatingWebhookConfiguration and the Secret holding its certificate. */}}
{{- define "tfjob-extender.webhookService" -}}
{{- printf "%s-webhook" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{- define "tfjob-extender.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "tfjob-extender.fullname" .) }}
{{- end }}

{{/* Where the loops pod mounts cert-manager's certificate (webhook.certManager.enabled). */}}
{{- define "tfjob-extender.webhookCertDir" -}}
/etc/tfjob-extender-webhook
{{- end }}

{{/*
The loops process's webhook flags: its listener on every address of the pod, and where its certificate
comes from: cert-manager's mounted Secret, or the extender's own (the Service, the Secret it keeps them in,
the configuration whose caBundle it writes).
*/}}
{{- define "tfjob-extender.webhookArgs" -}}
{{- if include "tfjob-extender.nativeGangs" . }}
- --webhook-host
- 0.0.0.0
- --webhook-port
- {{ .Values.webhook.port | quote }}
{{- if .Values.webhook.certManager.enabled }}
- --webhook-tls-cert-file
- {{ include "tfjob-extender.webhookCertDir" . }}/tls.crt
- --webhook-tls-key-file
- {{ include "tfjob-extender.webhookCertDir" . }}/tls.key
{{- else }}
- --webhook-service
- {{ include "tfjob-extender.webhookService" . }}
- --webhook-namespace
- {{ .Release.Namespace }}
- --webhook-configuration
- {{ include "tfjob-extender.fullname" . }}
- --webhook-secret
- {{ include "tfjob-extender.webhookSecret" . }}
{{- end }}
{{- end }}
{{- end }}

{{/* What the verb-serving extender writes: the gang plans on PodGroups of all three dialects. */}}
{{- define "tfjob-extender.extenderWrites" -}}
- apiGroups: [scheduling.x-k8s.io, scheduling.sigs.k8s.io, scheduling.k8s.io]
  resources: [podgroups]
  verbs: [patch]
{{- end }}

{{/* What the loops write: evictions, TFJobs (read by name before a resize), PodGroups' plans, Events, and
with policy.kueue_priority_boost the boost on Kueue's Workloads. */}}
{{- define "tfjob-extender.loopsWrites" -}}
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
- apiGroups: [scheduling.x-k8s.io, scheduling.sigs.k8s.io, scheduling.k8s.io]
  resources: [podgroups]
  verbs: [patch]
- apiGroups: [kubeflow.org]
  resources: [tfjobs]
  verbs: [get, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- if (.Values.policy | default dict).kueue_priority_boost }}
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [patch]
{{- end }}
{{- end }}
