#!/usr/bin/env bash
#! Starts the test control plane: one etcd and, per cluster (1 and 2), a kube-apiserver with its own
#! etcd prefix and a kube-controller-manager. Everything listens on 127.0.0.1. Writes certificates,
#! a token file, logs, pid files and `clusterN.kubeconfig` into the state directory, then waits until
#! every component answers. `bin` in the state directory links to the binaries (kubectl of the
#! clusters' version for tests: tests/support). Idempotent: components already running (by recorded pid) are left alone.
#! Stop with stop.sh.
#! For a private control plane (tests/leader_election.rs): FLOTILLA_CLUSTERS=1 starts cluster 1 only,
#! FLOTILLA_CONTROLLER_MANAGERS=0 starts no kube-controller-manager, FLOTILLA_AUDIT_POLICY=FILE
#! writes each API server's audit log to logs/auditN.log, and a tokens.csv already in the state
#! directory is kept (its first line is the kubeconfigs' user).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/flotilla-controlplane}"
ETCD_PORT="${FLOTILLA_ETCD_PORT:-23790}"
ETCD_PEER_PORT="${FLOTILLA_ETCD_PEER_PORT:-23800}"
APISERVER_PORTS=("${FLOTILLA_APISERVER1_PORT:-26443}" "${FLOTILLA_APISERVER2_PORT:-26444}")
KCM_PORTS=("${FLOTILLA_KCM1_PORT:-26457}" "${FLOTILLA_KCM2_PORT:-26458}")
READY_TIMEOUT="${FLOTILLA_READY_TIMEOUT:-60}"
CLUSTERS="${FLOTILLA_CLUSTERS:-2}"
CONTROLLER_MANAGERS="${FLOTILLA_CONTROLLER_MANAGERS:-1}"
AUDIT_POLICY="${FLOTILLA_AUDIT_POLICY:-}"

log() { printf '[controlplane] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# True when the pid file exists and names a live process running the expected binary.
running() {
  local pidfile="$STATE/pids/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"
}

# True when nothing accepts connections on 127.0.0.1:PORT.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# launch NAME BINARY ARGS...: starts BINARY in its own session, logging to logs/NAME.log.
launch() {
  local name="$1" port="$2"
  shift 2
  port_free "$port" || die "port $port (for $name) is already in use; set the FLOTILLA_*_PORT variables"
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name.pid"
  log "started $name (pid $!, port $port)"
}

# wait_ready NAME URL [CURL ARGS...]: polls URL until it answers 200, or fails with the log tail.
wait_ready() {
  local name="$1" url="$2" deadline=$((SECONDS + READY_TIMEOUT))
  shift 2
  until curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ] || ! running "$name" ""; then
      log "$name did not become ready at $url within ${READY_TIMEOUT}s; last log lines:"
      tail -n 30 "$STATE/logs/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
}

make_certs() {
  local pki="$STATE/pki"
  [ -f "$pki/apiserver.crt" ] && return
  mkdir -p "$pki"
  log "generating certificates and keys in $pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=flotilla-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 3650 -out "$pki/apiserver.crt" -extfile <(cat <<'EXT'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost, IP:10.0.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc
EXT
  ) 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  rm -f "$pki/apiserver.csr"
}

make_token() {
  [ -f "$STATE/tokens.csv" ] && return
  printf '%s,admin,admin,"system:masters"\n' "$(openssl rand -hex 24)" >"$STATE/tokens.csv"
  chmod 600 "$STATE/tokens.csv"
}

write_kubeconfig() {
  local n="$1" port="$2" token
  token=$(head -n1 "$STATE/tokens.csv" | cut -d, -f1)
  cat >"$STATE/cluster$n.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: cluster$n
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $(base64 -w0 "$STATE/pki/ca.crt")
users:
- name: admin
  user:
    token: $token
contexts:
- name: cluster$n
  context: {cluster: cluster$n, user: admin}
current-context: cluster$n
KUBECONFIG
  chmod 600 "$STATE/cluster$n.kubeconfig"
}

start_etcd() {
  running etcd etcd && return
  # A fresh store on every start: each test run gets empty clusters.
  rm -rf "$STATE/etcd"
  port_free "$ETCD_PEER_PORT" || die "port $ETCD_PEER_PORT (etcd peer) is already in use"
  launch etcd "$ETCD_PORT" "$BIN/etcd" --name flotilla --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "flotilla=http://127.0.0.1:$ETCD_PEER_PORT"
}

start_apiserver() {
  local n="$1" port="$2" audit=()
  running "apiserver$n" kube-apiserver && return
  if [ -n "$AUDIT_POLICY" ]; then
    audit=(--audit-policy-file="$AUDIT_POLICY" --audit-log-path="$STATE/logs/audit$n.log")
  fi
  launch "apiserver$n" "$port" "$BIN/kube-apiserver" "${audit[@]}" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --etcd-prefix="/cluster$n" \
    --bind-address=127.0.0.1 --secure-port="$port" \
    --tls-cert-file="$STATE/pki/apiserver.crt" --tls-private-key-file="$STATE/pki/apiserver.key" \
    --client-ca-file="$STATE/pki/ca.crt" --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=RBAC --allow-privileged=true \
    --service-account-key-file="$STATE/pki/sa.pub" \
    --service-account-signing-key-file="$STATE/pki/sa.key" \
    --service-account-issuer="https://kubernetes.default.svc" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --advertise-address=10.0.0.1 --endpoint-reconciler-type=none
}

start_controller_manager() {
  local n="$1" port="$2"
  running "controller-manager$n" kube-controller-manager && return
  mkdir -p "$STATE/controller-manager$n"
  launch "controller-manager$n" "$port" "$BIN/kube-controller-manager" \
    --kubeconfig="$STATE/cluster$n.kubeconfig" \
    --controllers='*,-nodeipam,-nodelifecycle' --leader-elect=false \
    --service-account-private-key-file="$STATE/pki/sa.key" --root-ca-file="$STATE/pki/ca.crt" \
    --use-service-account-credentials=false \
    --bind-address=127.0.0.1 --secure-port="$port" \
    --cert-dir="$STATE/controller-manager$n"
}

main() {
  BIN="$(bash "$HERE/build.sh")"
  mkdir -p "$STATE/logs" "$STATE/pids"
  ln -sfn "$BIN" "$STATE/bin"
  make_certs
  make_token
  local token n clusters managers=()
  token=$(head -n1 "$STATE/tokens.csv" | cut -d, -f1)
  clusters=$(seq "$CLUSTERS")
  [ "$CONTROLLER_MANAGERS" = 0 ] || managers=($clusters)

  start_etcd
  wait_ready etcd "http://127.0.0.1:$ETCD_PORT/health"
  for n in $clusters; do
    write_kubeconfig "$n" "${APISERVER_PORTS[$((n - 1))]}"
    start_apiserver "$n" "${APISERVER_PORTS[$((n - 1))]}"
  done
  for n in $clusters; do
    wait_ready "apiserver$n" "https://127.0.0.1:${APISERVER_PORTS[$((n - 1))]}/readyz" \
      --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $token"
  done
  for n in "${managers[@]}"; do
    start_controller_manager "$n" "${KCM_PORTS[$((n - 1))]}"
  done
  for n in "${managers[@]}"; do
    wait_ready "controller-manager$n" "https://127.0.0.1:${KCM_PORTS[$((n - 1))]}/healthz" --insecure
  done
  log "ready: kubeconfigs $(for n in $clusters; do printf '%s ' "$STATE/cluster$n.kubeconfig"; done)"
}

main "$@"
