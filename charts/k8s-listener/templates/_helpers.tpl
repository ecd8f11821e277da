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
