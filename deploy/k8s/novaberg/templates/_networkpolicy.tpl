{{/* Egress rule to DNS; call with the root context. */}}
{{- define "novaberg.dnsEgress" -}}
- to:
    {{- toYaml .Values.networkPolicy.dns.to | nindent 4 }}
  ports:
    - {port: {{ .Values.networkPolicy.dns.port }}, protocol: UDP}
    - {port: {{ .Values.networkPolicy.dns.port }}, protocol: TCP}
{{- end -}}

{{/* Egress rule to something outside the release: (dict "to" list "ports" list). An empty `to`
     leaves the destination open on those ports. */}}
{{- define "novaberg.externalEgress" -}}
- {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- range .ports }}
    - {port: {{ . }}, protocol: TCP}
    {{- end }}
{{- end -}}

{{/* Egress rule to components of this release: (dict "root" $ "components" list "ports" list). */}}
{{- define "novaberg.inReleaseEgress" -}}
- to:
    - podSelector:
        {{- include "novaberg.componentsSelector" . | nindent 8 }}
  ports:
    {{- range .ports }}
    - {port: {{ . }}, protocol: TCP}
    {{- end }}
{{- end -}}
