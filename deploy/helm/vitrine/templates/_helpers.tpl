{{- define "vitrine.name" -}}
{{ .Release.Name }}
{{- end }}

{{- define "vitrine.labels" -}}
app.kubernetes.io/name: vitrine
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: Helm
helm.sh/chart: vitrine-{{ .Chart.Version }}
{{- end }}
