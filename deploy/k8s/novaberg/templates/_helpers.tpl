{{- define "novaberg.labels" -}}
app.kubernetes.io/part-of: novaberg
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
