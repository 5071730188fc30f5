#!/usr/bin/env bash
#! Stops what start.sh (and run-all.sh) started: only the processes named by pid files in the state
#! directory, each checked to still run the recorded program. Clients first, then the API servers,
#! then etcd; within a group all are signalled at once. Certificates and logs stay.
set -euo pipefail

STATE="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/flotilla-controlplane}"

log() { printf '[controlplane] %s\n' "$*" >&2; }

# stop_group NAME:PROGRAM...: TERMs each recorded pid still running PROGRAM, waits up to 10 s for
# all of them, then KILLs the stragglers.
stop_group() {
  local entry name program pidfile pid pids=()
  for entry in "$@"; do
    name="${entry%%:*}" program="${entry#*:}" pidfile="$STATE/pids/$name.pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    rm -f "$pidfile"
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$program"; then
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid") && log "stopping $name (pid $pid)"
    fi
  done
  for _ in $(seq 100); do
    local alive=()
    for pid in "${pids[@]}"; do [ -e "/proc/$pid" ] && alive+=("$pid"); done
    pids=("${alive[@]}")
    [ "${#pids[@]}" -eq 0 ] && return
    sleep 0.1
  done
  log "killing pids ${pids[*]} (still running 10 s after TERM)"
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

stop_group node-sim1:node-sim node-sim2:node-sim \
  controller-manager1:kube-controller-manager controller-manager2:kube-controller-manager
stop_group apiserver1:kube-apiserver apiserver2:kube-apiserver
stop_group etcd:etcd
