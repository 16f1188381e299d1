{{/* Names and labels. */}}
{{- define "triton-go.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "triton-go.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "triton-go.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "triton-go.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "triton-go.selectorLabels" -}}
app.kubernetes.io/name: {{ include "triton-go.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "triton-go.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "triton-go.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The folder or URL the server reads (--model-repository), after checking
that the source is one the chart knows and has what it needs.
*/}}
{{- define "triton-go.repository" -}}
{{- $r := .Values.modelRepository }}
{{- if eq $r.source "objectStorage" }}
{{- if not $r.objectStorage.url }}{{ fail "modelRepository.objectStorage.url is required with modelRepository.source=objectStorage" }}{{ end }}
{{- $r.objectStorage.url }}
{{- else if eq $r.source "pvc" }}
{{- if not $r.pvc.claimName }}{{ fail "modelRepository.pvc.claimName is required with modelRepository.source=pvc" }}{{ end }}
{{- $r.path }}
{{- else if eq $r.source "image" }}
{{- $r.path }}
{{- else }}
{{- fail (printf "modelRepository.source %q: want image, pvc or objectStorage" $r.source) }}
{{- end }}
{{- end }}

{{/*
The environment variable that puts an object-storage repository's local
copies in the cache volume: the provider's TRITON_*_MOUNT_DIRECTORY.
*/}}
{{- define "triton-go.mountDirectoryEnv" -}}
{{- $u := .Values.modelRepository.objectStorage.url }}
{{- if hasPrefix "s3://" $u }}TRITON_AWS_MOUNT_DIRECTORY
{{- else if hasPrefix "gs://" $u }}TRITON_GCS_MOUNT_DIRECTORY
{{- else if hasPrefix "as://" $u }}TRITON_AZURE_MOUNT_DIRECTORY
{{- else }}{{ fail (printf "modelRepository.objectStorage.url %q: want s3://, gs:// or as://" $u) }}
{{- end }}
{{- end }}

{{/*
The server's arguments (the image's entry point is tritonserver). The
chart owns the flags it sets, the ports the probes and Service use and the
exit windows the grace period is derived from: server.extraArgs may not
name them, nor an abbreviation of them (tritonserver accepts unambiguous
prefixes).
*/}}
{{- define "triton-go.args" -}}
{{- $s := .Values.server }}
{{- if not (has $s.modelControlMode (list "none" "poll" "explicit")) }}
{{- fail (printf "server.modelControlMode %q: want none, poll or explicit" $s.modelControlMode) }}
{{- end }}
{{- $explicit := eq $s.modelControlMode "explicit" }}
{{- if and (not $explicit) (without $s.loadModels "*") }}
{{- fail (printf "server.loadModels %v needs server.modelControlMode=explicit (tritonserver refuses --load-model otherwise; in %s mode every model loads)" $s.loadModels $s.modelControlMode) }}
{{- end }}
{{- $owned := list "model-repository" "model-store" "model-control-mode" "repository-poll-secs" "load-model" "exit-on-error" "exit-drain-secs" "exit-timeout-secs" "http-port" "grpc-port" "metrics-port" "allow-http" "allow-grpc" "allow-metrics" }}
{{- range $arg := $s.extraArgs }}
{{- if hasPrefix "--" $arg }}
{{- $name := trimPrefix "--" (splitList "=" $arg | first) }}
{{- range $owned }}
{{- if hasPrefix $name . }}
{{- fail (printf "server.extraArgs: %q names --%s, which the chart sets from its own values" $arg .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
- {{ printf "--model-repository=%s" (include "triton-go.repository" .) | quote }}
- {{ printf "--model-control-mode=%s" $s.modelControlMode | quote }}
{{- if eq $s.modelControlMode "poll" }}
- {{ printf "--repository-poll-secs=%d" (int $s.repositoryPollSecs) | quote }}
{{- end }}
{{- if $explicit }}
{{- range $s.loadModels }}
- {{ printf "--load-model=%s" . | quote }}
{{- end }}
{{- end }}
- {{ printf "--exit-on-error=%t" $s.exitOnError | quote }}
- {{ printf "--exit-drain-secs=%d" (int $s.exitDrainSecs) | quote }}
- {{ printf "--exit-timeout-secs=%d" (int $s.exitTimeoutSecs) | quote }}
{{- range $s.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: at least the drain, the exit timeout and a
margin, because Kubernetes kills the container when it ends. Derived when
unset; a smaller value fails the render.
*/}}
{{- define "triton-go.terminationGracePeriodSeconds" -}}
{{- $s := .Values.server }}
{{- $need := add $s.exitDrainSecs $s.exitTimeoutSecs .Values.terminationGraceMarginSeconds }}
{{- $set := .Values.terminationGracePeriodSeconds }}
{{- if kindIs "invalid" $set }}
{{- $need }}
{{- else if lt (int64 $set) (int64 $need) }}
{{- fail (printf "terminationGracePeriodSeconds %d is less than server.exitDrainSecs (%d) + server.exitTimeoutSecs (%d) + terminationGraceMarginSeconds (%d) = %d: Kubernetes would kill the server before it has drained and finished its requests. Raise it, or leave it unset and the chart derives it" (int64 $set) (int64 $s.exitDrainSecs) (int64 $s.exitTimeoutSecs) (int64 .Values.terminationGraceMarginSeconds) (int64 $need)) }}
{{- else }}
{{- int64 $set }}
{{- end }}
{{- end }}

{{/*
A Prometheus duration ("1m30s", "500ms") in milliseconds, for comparing
podMonitor.scrapeTimeout with podMonitor.interval.
*/}}
{{- define "triton-go.durationMs" -}}
{{- $d := toString . }}
{{- if not (regexMatch "^([0-9]+(ms|s|m|h|d|w|y))+$" $d) }}
{{- fail (printf "%q is not a Prometheus duration (e.g. 15s, 1m30s)" $d) }}
{{- end }}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000 "y" 31536000000 }}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" $d -1 }}
{{- $n := regexFind "^[0-9]+" . }}
{{- $total = add $total (mul (atoi $n) (get $units (trimPrefix $n .))) }}
{{- end }}
{{- $total }}
{{- end }}
