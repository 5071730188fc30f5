{{/* The prefix of every name: the release's name. */}}
{{- define "flotilla.name" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* The controller's name: its ServiceAccount, Role, Deployment and pod label. */}}
{{- define "flotilla.controller" -}}
{{- include "flotilla.name" . -}}-controller
{{- end -}}

{{/* The ServiceAccount as a subject of a binding. */}}
{{- define "flotilla.subject" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "flotilla.controller" . }}
    namespace: {{ .Release.Namespace }}
{{- end -}}
