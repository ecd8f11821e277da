{{- define "k8s-listener.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "k8s-listener.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "k8s-listener.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "k8s-listener.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "k8s-listener.selectorLabels" -}}
app.kubernetes.io/name: {{ include "k8s-listener.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "k8s-listener.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "k8s-listener.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "k8s-listener.apiKeySecretName" -}}
{{- if .Values.controlPlane.existingSecret.name -}}
{{- .Values.controlPlane.existingSecret.name -}}
{{- else -}}
{{- printf "%s-api-key" (include "k8s-listener.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- /* The API key is mounted as a file (not an env var), so a rotated Secret reaches the agent without a restart. */ -}}
{{- define "k8s-listener.apiKeyDir" -}}
/var/run/secrets/k8s-listener
{{- end -}}

{{- define "k8s-listener.hasApiKey" -}}
{{- if or .Values.controlPlane.apiKey .Values.controlPlane.existingSecret.name -}}true{{- end -}}
{{- end -}}

{{- /* registry/repository, then @digest when set (it pins the image; the tag is then ignored), else :tag. */ -}}
{{- define "k8s-listener.image" -}}
{{- $repository := .Values.image.repository -}}
{{- if .Values.image.registry -}}
{{- $repository = printf "%s/%s" .Values.image.registry .Values.image.repository -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}
