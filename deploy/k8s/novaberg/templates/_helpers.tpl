{{/* Names ---------------------------------------------------------------------------------- */}}

{{- define "novaberg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every resource name: the release name unless overridden. 40 characters leave room
     for the longest suffix ("-pipeline-headless") within a DNS label. */}}
{{- define "novaberg.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "novaberg.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "novaberg.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "novaberg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "novaberg.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels: call with (dict "root" $ "component" "kzg"). Selectors use name + instance +
     component only, so two releases (or two components) never select each other's pods. */}}
{{- define "novaberg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "novaberg.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "novaberg.labels" -}}
{{ include "novaberg.selectorLabels" . }}
app.kubernetes.io/version: {{ include "novaberg.imageTag" .root | quote }}
app.kubernetes.io/part-of: novaberg
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "novaberg.chart" .root }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A podSelector for some components of this release: (dict "root" $ "components" (list ...)). */}}
{{- define "novaberg.componentsSelector" -}}
matchLabels:
  app.kubernetes.io/name: {{ include "novaberg.name" .root }}
  app.kubernetes.io/instance: {{ .root.Release.Name }}
matchExpressions:
  - key: app.kubernetes.io/component
    operator: In
    values: {{ toJson .components }}
{{- end -}}

{{/* What each service needs (the code's own wiring): its store, the peers it calls, whether it
     embeds (NOVABERG_EMBEDDING, Ollama) and whether it writes the pipeline log. */}}
{{- define "novaberg.traits" -}}
kzg: {store: redis, peers: [log], embedding: true, logWriter: true, autoscaled: true}
lzg: {store: postgres, peers: [log], embedding: true, logWriter: true, autoscaled: true}
pipeline: {store: redis, peers: [kzg, lzg, log], embedding: true, logWriter: true, autoscaled: true}
pixie: {store: postgres, peers: [kzg, lzg, log], embedding: false, logWriter: true, autoscaled: false}
log: {store: postgres, peers: [], embedding: false, logWriter: false, autoscaled: true}
{{- end -}}

{{- define "novaberg.serviceNames" -}}
[kzg, lzg, pipeline, pixie, log]
{{- end -}}

{{/* services.<svc>.settings key → the variable it sets (README configuration table). */}}
{{- define "novaberg.settingVariables" -}}
kzg:
  reinforcement: NOVABERG_KZG_REINFORCEMENT
  vectorAlgorithm: NOVABERG_KZG_VECTOR_ALGORITHM
  reclaimIdleMs: NOVABERG_KZG_RECLAIM_IDLE_MS
lzg:
  poolMax: NOVABERG_LZG_POOL_MAX
  cacheMb: NOVABERG_LZG_CACHE_MB
pipeline:
  analyzer: NOVABERG_PIPELINE_ANALYZER
  kzgTopK: NOVABERG_PIPELINE_KZG_TOP_K
  recallK: NOVABERG_PIPELINE_RECALL_K
  gewichtUser: NOVABERG_PIPELINE_GEWICHT_USER
  gewichtAssistant: NOVABERG_PIPELINE_GEWICHT_ASSISTANT
  ollamaModel: NOVABERG_PIPELINE_OLLAMA_MODEL
  ollamaTimeoutS: NOVABERG_PIPELINE_OLLAMA_TIMEOUT_S
  ollamaFallback: NOVABERG_PIPELINE_OLLAMA_FALLBACK
  peerTimeoutS: NOVABERG_PIPELINE_PEER_TIMEOUT_S
  registryCacheS: NOVABERG_PIPELINE_REGISTRY_CACHE_S
  silentPeerPauseS: NOVABERG_PIPELINE_SILENT_PEER_PAUSE_S
pixie:
  decayAt: NOVABERG_PIXIE_DECAY_AT
  maxAttempts: NOVABERG_PIXIE_MAX_ATTEMPTS
  logRetentionDays: NOVABERG_PIXIE_LOG_RETENTION_DAYS
  runRetentionDays: NOVABERG_PIXIE_RUN_RETENTION_DAYS
  concurrency: NOVABERG_PIXIE_CONCURRENCY
  batchSize: NOVABERG_PIXIE_BATCH_SIZE
  blockMs: NOVABERG_PIXIE_BLOCK_MS
  backoffBaseS: NOVABERG_PIXIE_BACKOFF_BASE_S
  backoffMaxS: NOVABERG_PIXIE_BACKOFF_MAX_S
  reclaimIdleMs: NOVABERG_PIXIE_RECLAIM_IDLE_MS
  pairLockWaitMs: NOVABERG_PIXIE_PAIR_LOCK_WAIT_MS
  staleRunS: NOVABERG_PIXIE_STALE_RUN_S
  dailyRetryS: NOVABERG_PIXIE_DAILY_RETRY_S
  schedulerIntervalS: NOVABERG_PIXIE_SCHEDULER_INTERVAL_S
  rpcTimeoutS: NOVABERG_PIXIE_RPC_TIMEOUT_S
  runWindowS: NOVABERG_PIXIE_RUN_WINDOW_S
log:
  vorhaltungTage: NOVABERG_LOG_VORHALTUNG_TAGE
  poolMax: NOVABERG_LOG_POOL_MAX
{{- end -}}

{{/* A value as an environment string: whole numbers without exponent or ".0" (Helm reads YAML
     numbers as float64, and 1000000 would print as 1e+06). */}}
{{- define "novaberg.scalar" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* Addresses ------------------------------------------------------------------------------ */}}

{{/* A service's address for gRPC clients: (dict "root" $ "svc" "kzg"). The headless Service
     resolves to every ready pod; the clients balance round-robin over them. */}}
{{- define "novaberg.address" -}}
{{- $override := get .root.Values.addresses .svc -}}
{{- if $override -}}
{{- $override -}}
{{- else -}}
{{- printf "dns:///%s-%s-headless.%s.svc.%s:%d" (include "novaberg.fullname" .root) .svc .root.Release.Namespace .root.Values.clusterDomain (int .root.Values.grpc.port) -}}
{{- end -}}
{{- end -}}

{{- define "novaberg.ollamaUrl" -}}
{{- if .Values.embedding.ollamaUrl -}}
{{- .Values.embedding.ollamaUrl -}}
{{- else if .Values.ollama.enabled -}}
{{- printf "http://%s-ollama.%s.svc.%s:%d" (include "novaberg.fullname" .) .Release.Namespace .Values.clusterDomain (int .Values.ollama.port) -}}
{{- end -}}
{{- end -}}

{{/* The services that call Ollama: the embedders when the provider is ollama, and the pipeline
     when its analyzer is. */}}
{{- define "novaberg.ollamaUsers" -}}
{{- $users := list -}}
{{- if eq .Values.embedding.provider "ollama" -}}
{{- $users = list "kzg" "lzg" "pipeline" -}}
{{- end -}}
{{- if and (eq .Values.services.pipeline.settings.analyzer "ollama") (not (has "pipeline" $users)) -}}
{{- $users = append $users "pipeline" -}}
{{- end -}}
{{- toJson $users -}}
{{- end -}}

{{- define "novaberg.otlpEndpoint" -}}
{{- if .Values.telemetry.otlpEndpoint -}}
{{- .Values.telemetry.otlpEndpoint -}}
{{- else if .Values.otelCollector.enabled -}}
{{- printf "http://%s-otel-collector.%s.svc.%s:4317" (include "novaberg.fullname" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}
{{- end -}}

{{/* Stores --------------------------------------------------------------------------------- */}}

{{- define "novaberg.storesSecretName" -}}
{{- printf "%s-stores" (include "novaberg.fullname" .) -}}
{{- end -}}

{{/* Whether the chart makes the stores Secret (an in-chart store or a URL given as a value). */}}
{{- define "novaberg.makesStoresSecret" -}}
{{- if or .Values.redis.enabled .Values.postgresql.enabled .Values.stores.redisUrl .Values.stores.postgresUrl -}}true{{- end -}}
{{- end -}}

{{/* secretKeyRef of a store URL: (dict "root" $ "store" "redis"|"postgres"). */}}
{{- define "novaberg.storeUrlRef" -}}
{{- $root := .root -}}
{{- if eq .store "redis" -}}
{{- if or $root.Values.redis.enabled $root.Values.stores.redisUrl -}}
{name: {{ include "novaberg.storesSecretName" $root }}, key: redis-url}
{{- else if $root.Values.stores.existingSecret -}}
{name: {{ $root.Values.stores.existingSecret }}, key: {{ $root.Values.stores.existingSecretKeys.redisUrl }}}
{{- else -}}
{{- fail "no Redis for kzg and pipeline: set redis.enabled, stores.redisUrl or stores.existingSecret" -}}
{{- end -}}
{{- else -}}
{{- if or $root.Values.postgresql.enabled $root.Values.stores.postgresUrl -}}
{name: {{ include "novaberg.storesSecretName" $root }}, key: postgres-url}
{{- else if $root.Values.stores.existingSecret -}}
{name: {{ $root.Values.stores.existingSecret }}, key: {{ $root.Values.stores.existingSecretKeys.postgresUrl }}}
{{- else -}}
{{- fail "no PostgreSQL for lzg, log and pixie: set postgresql.enabled, stores.postgresUrl or stores.existingSecret" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pod annotation that restarts pods when what they read changes. */}}
{{- define "novaberg.configChecksum" -}}
{{- $parts := list -}}
{{- if include "novaberg.makesStoresSecret" . -}}
{{- $parts = append $parts (include (print .Template.BasePath "/secret-stores.yaml") .) -}}
{{- end -}}
{{- $parts = append $parts (toJson .Values.stores) -}}
{{- $parts = append $parts (include (print .Template.BasePath "/configmap-authz.yaml") .) -}}
{{- $parts = append $parts (toJson .Values.tls) -}}
{{- join "\n" $parts | sha256sum -}}
{{- end -}}

{{/* TLS ------------------------------------------------------------------------------------ */}}

{{- define "novaberg.tlsSecretName" -}}
{{- $name := get .root.Values.tls.secretNames .svc -}}
{{- default (printf "%s-%s-tls" (include "novaberg.fullname" .root) .svc) $name -}}
{{- end -}}

{{- define "novaberg.authzConfigMapName" -}}
{{- default (printf "%s-authz" (include "novaberg.fullname" .)) .Values.authz.existingConfigMap -}}
{{- end -}}
