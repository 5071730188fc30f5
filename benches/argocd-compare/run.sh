#!/usr/bin/env bash
#! Flotilla and Argo CD side by side, on this machine, on the same workload: one ApplicationSet
#! (list generator of APPS elements, default 1,000) whose Applications each sync a directory of a
#! git repository served by `git daemon` on loopback (a ConfigMap and a ServiceAccount) with
#! automated sync, prune and self-heal, into a private test control plane (cluster 1 only,
#! restarted with an empty etcd for each side). For each side it reports: the time from the
#! ApplicationSet's creation until every Application is Synced and Healthy, the CPU its
#! processes used meanwhile (utime + stime + reaped children's, from /proc), each process's peak
#! RSS (VmHWM), and the API server's write requests meanwhile (`apiserver_request_total` by verb
#! and resource, every verb but GET, LIST, WATCH and CONNECT, all clients; server-side dry runs
#! listed apart).
#!
#! Argo CD is built from its own Go source (ARGOCD_VERSION, default v3.6.2, from the Go module
#! proxy; its go.mod points `gitops-engine` at a nested directory that the module zip leaves out,
#! so the build points it at the same version's `gitops-engine/v3` module), with Go
#! GO_TOOLCHAIN (default go1.27.3, the version its go.mod asks for), and cached in
#! ~/.cache/flotilla/argocd/. It runs as Argo CD's own local development setup runs it
#! (Procfile: `ARGOCD_FAKE_IN_CLUSTER=true`, the in-cluster destination is the kubeconfig's
#! cluster): application controller, repo server and ApplicationSet controller processes of the
#! one multi-call binary, and Debian's redis-server (installed with apt when missing), all with
#! their defaults. Flotilla is `target/release/flotilla controller` (built when missing).
#!
#! Not part of the test command. Usage: benches/argocd-compare/run.sh [argocd|flotilla]...
#! (both by default). Environment: APPS, TIMEOUT_SECS (per side, default 1800), POLL_SECS
#! (default 2), ARGOCD_VERSION, GO_TOOLCHAIN, FLOTILLA_BIN, and the control plane's
#! FLOTILLA_CONTROLPLANE_DIR and FLOTILLA_*_PORT (defaults below keep clear of the shared one).
#! Stops everything it started on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
APPS="${APPS:-1000}"
TIMEOUT_SECS="${TIMEOUT_SECS:-1800}"
POLL_SECS="${POLL_SECS:-2}"
ARGOCD_VERSION="${ARGOCD_VERSION:-v3.6.2}"
GO_TOOLCHAIN="${GO_TOOLCHAIN:-go1.27.3}"
CACHE="$HOME/.cache/flotilla"
WORK="${BENCH_DIR:-/tmp/flotilla-argocd-compare}"
export FLOTILLA_CONTROLPLANE_DIR="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/cp-argocd}"
export FLOTILLA_ETCD_PORT="${FLOTILLA_ETCD_PORT:-33790}"
export FLOTILLA_ETCD_PEER_PORT="${FLOTILLA_ETCD_PEER_PORT:-33800}"
export FLOTILLA_APISERVER1_PORT="${FLOTILLA_APISERVER1_PORT:-36443}"
export FLOTILLA_APISERVER2_PORT="${FLOTILLA_APISERVER2_PORT:-36444}"
export FLOTILLA_KCM1_PORT="${FLOTILLA_KCM1_PORT:-36457}"
export FLOTILLA_KCM2_PORT="${FLOTILLA_KCM2_PORT:-36458}"
export FLOTILLA_CLUSTERS=1
KUBECONFIG_FILE="$FLOTILLA_CONTROLPLANE_DIR/cluster1.kubeconfig"
CLK_TCK="$(getconf CLK_TCK)"

log() { printf '[argocd-compare] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- processes this script starts, stopped on exit --------------------------------------------

STARTED=()
CONTROLPLANE_UP=0

# start NAME COMMAND...: runs COMMAND in its own session, logging to $WORK/logs/NAME.log; its pid
# is left in PID.
start() {
  local name="$1"
  shift
  setsid "$@" >"$WORK/logs/$name.log" 2>&1 </dev/null &
  PID="$!"
  STARTED+=("$PID")
}

stop_started() {
  local pid
  for pid in "${STARTED[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${STARTED[@]}"; do
    for _ in $(seq 50); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  STARTED=()
}

stop_controlplane() {
  [ "$CONTROLPLANE_UP" = 1 ] || return 0
  bash "$ROOT/tests/controlplane/stop.sh"
  CONTROLPLANE_UP=0
}

cleanup() {
  stop_started
  [ -n "${GIT_DAEMON_PID:-}" ] && kill -TERM "$GIT_DAEMON_PID" 2>/dev/null || true
  stop_controlplane
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
  local port="$1" name="$2"
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
    sleep 0.1
  done
  die "$name did not listen on port $port; see $WORK/logs/"
}

# --- what both sides need -------------------------------------------------------------------

install_redis() {
  command -v redis-server >/dev/null && return
  log "installing redis-server"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server >&2
}

# Builds Argo CD's multi-call binary once per version; prints its directory (with the
# per-component names linked to it: the binary picks its component by argv[0]).
build_argocd() {
  local out="$CACHE/argocd/bin-$ARGOCD_VERSION"
  if [ ! -x "$out/argocd" ]; then
    export GOMODCACHE="$CACHE/go-mod" GOCACHE="$CACHE/go-build" GOTOOLCHAIN="$GO_TOOLCHAIN" \
      GOFLAGS=-mod=mod CGO_ENABLED=0
    local module=github.com/argoproj/argo-cd/v3 engine=github.com/argoproj/argo-cd/gitops-engine/v3
    log "downloading Argo CD $ARGOCD_VERSION's source and building it with $GO_TOOLCHAIN"
    (cd "$CACHE" && go mod download "$module@$ARGOCD_VERSION" "$engine@$ARGOCD_VERSION") >&2
    local src="$CACHE/argocd/src-$ARGOCD_VERSION"
    rm -rf "$src" && mkdir -p "$CACHE/argocd"
    cp -r "$GOMODCACHE/$module@$ARGOCD_VERSION" "$src" && chmod -R u+w "$src"
    (cd "$src" && go mod edit -replace "$engine=$GOMODCACHE/$engine@$ARGOCD_VERSION" &&
      go build -trimpath -o "$out/argocd" ./cmd) >&2
  fi
  local component
  for component in argocd-application-controller argocd-repo-server argocd-applicationset-controller; do
    ln -sfn argocd "$out/$component"
  done
  # The scripts Argo CD's image puts on PATH beside the binary (its Dockerfile).
  cp "$CACHE/argocd/src-$ARGOCD_VERSION/hack/gpg-wrapper.sh" \
    "$CACHE/argocd/src-$ARGOCD_VERSION/hack/git-verify-wrapper.sh" "$out/"
  chmod +x "$out/gpg-wrapper.sh" "$out/git-verify-wrapper.sh"
  echo "$out"
}

flotilla_binary() {
  local bin="${FLOTILLA_BIN:-$ROOT/target/release/flotilla}"
  if [ ! -x "$bin" ]; then
    log "building $bin"
    (cd "$ROOT" && cargo build --release --bin flotilla) >&2
  fi
  echo "$bin"
}

# A bare repository with one directory per Application, served by git daemon.
serve_repository() {
  local repo="$WORK/repo" i
  rm -rf "$repo" "$WORK/served" && mkdir -p "$repo/apps" "$WORK/served"
  for i in $(seq 0 $((APPS - 1))); do
    mkdir -p "$repo/apps/app-$i"
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-%s\ndata:\n  key: value-%s\n' \
      "$i" "$i" >"$repo/apps/app-$i/configmap.yaml"
    printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app-%s\n' \
      "$i" >"$repo/apps/app-$i/serviceaccount.yaml"
  done
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -q -m fleet
  git clone -q --bare "$repo" "$WORK/served/fleet.git"
  local port
  port="$(free_port)"
  setsid git daemon --reuseaddr --export-all --listen=127.0.0.1 --port="$port" \
    --base-path="$WORK/served" "$WORK/served" >"$WORK/logs/git-daemon.log" 2>&1 </dev/null &
  GIT_DAEMON_PID="$!"
  wait_port "$port" "git daemon"
  REPO_URL="git://127.0.0.1:$port/fleet.git"
}

# application_set API_VERSION NAMESPACE: the workload, the same for both but for the group.
application_set() {
  local elements i
  elements="$(for i in $(seq 0 $((APPS - 1))); do printf '      - name: app-%s\n' "$i"; done)"
  cat <<YAML
apiVersion: $1
kind: ApplicationSet
metadata:
  name: fleet
  namespace: $2
spec:
  generators:
  - list:
      elements:
$elements
  template:
    metadata:
      name: '{{name}}'
    spec:
      project: default
      source:
        repoURL: $REPO_URL
        targetRevision: main
        path: 'apps/{{name}}'
      destination:
        name: in-cluster
        namespace: fleet
      syncPolicy:
        automated:
          prune: true
          selfHeal: true
YAML
}

kubectl_() { "$FLOTILLA_CONTROLPLANE_DIR/bin/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# wait_established CRD...: until each CRD is served.
wait_established() {
  local crd
  for crd in "$@"; do
    for _ in $(seq 300); do
      [ "$(kubectl_ get crd "$crd" \
        -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && continue 2
      sleep 0.2
    done
    die "CRD $crd not established"
  done
}

fresh_controlplane() {
  stop_controlplane
  log "starting a private control plane in $FLOTILLA_CONTROLPLANE_DIR (empty etcd)"
  CONTROLPLANE_UP=1
  bash "$ROOT/tests/controlplane/start.sh" >&2
  kubectl_ create namespace fleet >/dev/null
}

# The API server's write requests by "VERB resource[/subresource]", one per line with its count.
api_writes() {
  local token
  token="$(head -n1 "$FLOTILLA_CONTROLPLANE_DIR/tokens.csv" | cut -d, -f1)"
  curl -fsS --cacert "$FLOTILLA_CONTROLPLANE_DIR/pki/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$FLOTILLA_APISERVER1_PORT/metrics" |
    awk '/^apiserver_request_total\{/ {
      verb = ""; res = ""; sub_ = ""
      if (match($0, /verb="[^"]*"/)) verb = substr($0, RSTART + 6, RLENGTH - 7)
      if (match($0, /[{,]resource="[^"]*"/)) res = substr($0, RSTART + 11, RLENGTH - 12)
      if (match($0, /subresource="[^"]*"/)) sub_ = substr($0, RSTART + 13, RLENGTH - 14)
      if (verb ~ /^(GET|LIST|WATCH|CONNECT)$/) next
      key = verb " " res (sub_ == "" ? "" : "/" sub_)
      if (match($0, /dry_run="[^"]+"/)) key = key " (dry run)"
      n[key] += $NF
    } END { for (k in n) printf "%s\t%d\n", k, n[k] }' | sort
}

# CPU ticks (utime + stime + cutime + cstime) of a pid.
cpu_ticks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$1/stat"
}

peak_rss_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# converged NAMESPACE RESOURCE: how many Applications are Synced and Healthy.
converged_count() {
  kubectl_ get "$2" -n "$1" \
    -o jsonpath='{range .items[*]}{.status.sync.status}{" "}{.status.health.status}{"\n"}{end}' |
    grep -c '^Synced Healthy$' || true
}

# measure SIDE NAMESPACE RESOURCE NAME=PID...: creates the ApplicationSet (in $WORK/$SIDE.yaml),
# waits for convergence and writes $WORK/results/SIDE.* .
measure() {
  local side="$1" namespace="$2" resource="$3"
  shift 3
  local entry name pid before_writes start now count elapsed
  declare -A before
  for entry in "$@"; do before[${entry%%=*}]="$(cpu_ticks "${entry#*=}")"; done
  before_writes="$(api_writes)"
  local load_before
  load_before="$(cut -d' ' -f1 /proc/loadavg)"
  start="$(date +%s.%N)"
  kubectl_ create -f "$WORK/$side.yaml" >/dev/null
  log "$side: ApplicationSet of $APPS created; waiting for every Application Synced and Healthy"
  while :; do
    count="$(converged_count "$namespace" "$resource")"
    now="$(date +%s.%N)"
    elapsed="$(echo "$now - $start" | bc)"
    [ "$count" -ge "$APPS" ] && break
    if [ "$(echo "$elapsed > $TIMEOUT_SECS" | bc)" = 1 ]; then
      log "$side: only $count of $APPS Synced and Healthy after ${TIMEOUT_SECS}s"
      echo "$side not converged: $count of $APPS after ${TIMEOUT_SECS}s" >>"$WORK/results/summary"
      return 1
    fi
    for entry in "$@"; do
      [ -e "/proc/${entry#*=}" ] || die "$side: ${entry%%=*} exited; see $WORK/logs/"
    done
    sleep "$POLL_SECS"
  done
  log "$side: converged in ${elapsed}s"
  echo "load average (1 min) $load_before at the start, $(cut -d' ' -f1 /proc/loadavg) at convergence" \
    >"$WORK/results/$side.load"
  local cpu_total=0 rss_total=0 cpu rss
  : >"$WORK/results/$side.processes"
  for entry in "$@"; do
    name="${entry%%=*}" pid="${entry#*=}"
    cpu="$(echo "scale=1; ($(cpu_ticks "$pid") - ${before[$name]}) / $CLK_TCK" | bc)"
    rss="$(peak_rss_kib "$pid")"
    cpu_total="$(echo "$cpu_total + $cpu" | bc)"
    rss_total=$((rss_total + rss))
    printf '%s\t%s\t%s\n' "$name" "$cpu" "$((rss / 1024))" >>"$WORK/results/$side.processes"
  done
  join -t $'\t' -a 2 -e 0 -o 0,1.2,2.2 <(echo "$before_writes") <(api_writes) |
    awk -F'\t' '$3 - $2 > 0 { printf "%s\t%d\n", $1, $3 - $2 }' >"$WORK/results/$side.writes"
  local writes
  writes="$(awk -F'\t' '{ s += $2 } END { print s + 0 }' "$WORK/results/$side.writes")"
  printf '%s\t%.1f\t%s\t%s\t%s\n' "$side" "$elapsed" "$cpu_total" "$((rss_total / 1024))" "$writes" \
    >>"$WORK/results/summary"
}

# --- the two sides ----------------------------------------------------------------------------

run_argocd() {
  local bin src redis_port repo_port
  bin="$(build_argocd)"
  src="$CACHE/argocd/src-$ARGOCD_VERSION"
  install_redis
  fresh_controlplane
  kubectl_ create namespace argocd >/dev/null
  kubectl_ apply --server-side -f "$src/manifests/crds/application-crd.yaml" \
    -f "$src/manifests/crds/applicationset-crd.yaml" -f "$src/manifests/crds/appproject-crd.yaml" >/dev/null
  wait_established applications.argoproj.io applicationsets.argoproj.io appprojects.argoproj.io
  # What Argo CD's install manifests create empty, and the project its API server would create.
  kubectl_ apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cmd-params-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
type: Opaque
stringData: {server.secretkey: bench}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
YAML
  application_set argoproj.io/v1alpha1 argocd >"$WORK/argocd.yaml"

  local data="$WORK/argocd-data"
  mkdir -p "$data/tls" "$data/ssh" "$data/gpg"
  local path="$PATH"
  export PATH="$bin:$PATH" ARGOCD_FAKE_IN_CLUSTER=true KUBECONFIG="$KUBECONFIG_FILE" ARGOCD_GPG_ENABLED=false \
    ARGOCD_TLS_DATA_PATH="$data/tls" ARGOCD_SSH_DATA_PATH="$data/ssh" ARGOCD_GNUPGHOME="$data/gpg"
  redis_port="$(free_port)"
  local redis repo controller appset
  start redis redis-server --save '' --appendonly no --bind 127.0.0.1 --port "$redis_port"
  redis="$PID"
  wait_port "$redis_port" redis-server
  repo_port="$(free_port)"
  start repo-server "$bin/argocd-repo-server" --port "$repo_port" \
    --metrics-port "$(free_port)" --redis "127.0.0.1:$redis_port"
  repo="$PID"
  wait_port "$repo_port" argocd-repo-server
  start application-controller "$bin/argocd-application-controller" \
    --namespace argocd --kubeconfig "$KUBECONFIG_FILE" --redis "127.0.0.1:$redis_port" \
    --repo-server "127.0.0.1:$repo_port" --metrics-port "$(free_port)"
  controller="$PID"
  start applicationset-controller "$bin/argocd-applicationset-controller" \
    --namespace argocd --kubeconfig "$KUBECONFIG_FILE" --argocd-repo-server "127.0.0.1:$repo_port" \
    --metrics-addr "127.0.0.1:$(free_port)" --probe-addr "127.0.0.1:$(free_port)" \
    --webhook-addr "127.0.0.1:$(free_port)"
  appset="$PID"
  sleep 15 # informers synced, cluster cache built
  measure argocd argocd applications.argoproj.io \
    application-controller="$controller" repo-server="$repo" \
    applicationset-controller="$appset" redis="$redis" || true
  stop_started
  unset ARGOCD_FAKE_IN_CLUSTER KUBECONFIG
  export PATH="$path"
}

run_flotilla() {
  local bin controller
  bin="$(flotilla_binary)"
  fresh_controlplane
  kubectl_ create namespace flotilla >/dev/null
  kubectl_ apply --server-side -f "$ROOT/deploy/crds/applications.flotilla.dev.yaml" \
    -f "$ROOT/deploy/crds/applicationsets.flotilla.dev.yaml" \
    -f "$ROOT/deploy/crds/appprojects.flotilla.dev.yaml" >/dev/null
  wait_established applications.flotilla.dev applicationsets.flotilla.dev appprojects.flotilla.dev
  application_set flotilla.dev/v1alpha1 flotilla >"$WORK/flotilla.yaml"
  start flotilla-controller env RUST_LOG=warn "$bin" controller -n flotilla \
    --kubeconfig "$KUBECONFIG_FILE" --metrics-addr "127.0.0.1:$(free_port)" \
    --repo-cache "$WORK/flotilla-repos"
  controller="$PID"
  sleep 15
  measure flotilla flotilla applications.flotilla.dev controller="$controller" || true
  stop_started
}

report() {
  local side
  printf '\n%s Applications (ApplicationSet, list generator; a ConfigMap and a ServiceAccount each)\n' "$APPS"
  printf '%-10s %12s %14s %16s %14s\n' side 'converge s' 'CPU s (all)' 'peak RSS MiB' 'API writes'
  awk -F'\t' 'NF == 5 { printf "%-10s %12.1f %14.1f %16d %14d\n", $1, $2, $3, $4, $5 }
              NF != 5 { print }' "$WORK/results/summary"
  for side in argocd flotilla; do
    [ -f "$WORK/results/$side.processes" ] || continue
    printf '\n%s: %s\n' "$side" "$(cat "$WORK/results/$side.load")"
    printf '%s, per process (CPU s, peak RSS MiB):\n' "$side"
    awk -F'\t' '{ printf "  %-28s %8.1f %8d\n", $1, $2, $3 }' "$WORK/results/$side.processes"
    printf '%s, API writes by verb and resource (per Application):\n' "$side"
    awk -F'\t' -v apps="$APPS" '{ printf "  %-40s %8d  %6.2f\n", $1, $2, $2 / apps }' \
      "$WORK/results/$side.writes"
  done
}

main() {
  local sides=("$@")
  [ "${#sides[@]}" -gt 0 ] || sides=(argocd flotilla)
  rm -rf "$WORK/results" "$WORK/logs" && mkdir -p "$WORK/results" "$WORK/logs"
  serve_repository
  log "repository $REPO_URL with $APPS application directories"
  local side
  for side in "${sides[@]}"; do
    case "$side" in
      argocd) run_argocd ;;
      flotilla) run_flotilla ;;
      *) die "unknown side $side (argocd or flotilla)" ;;
    esac
  done
  report
}

main "$@"
